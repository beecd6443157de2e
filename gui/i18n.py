"""English and Japanese UI through Qt's own translator (``resources/translations/gputray_ja.qm``).

Every user-visible string goes through :func:`tr`, one translation context (``gputray``). The language
follows the system locale unless the config says ``[gui] language = "en" | "ja"``.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator

from gputray.resources import resource_path

CONTEXT = "gputray"
LANGUAGES = ("auto", "en", "ja")

_installed: QTranslator | None = None


def tr(text: str) -> str:
    return QCoreApplication.translate(CONTEXT, text)


def tr_noop(text: str) -> str:
    """Marks a constant for translation (the .ts check finds it); ``tr`` translates it where shown."""
    return text


def resolve_language(setting: str | None, locale_name: str | None = None) -> str:
    """``auto`` (or anything unknown) follows the locale: ``ja_JP`` → ``ja``, everything else → ``en``."""
    if setting in ("en", "ja"):
        return setting
    name = locale_name if locale_name is not None else QLocale.system().name()
    return "ja" if name.lower().startswith("ja") else "en"


def install_language(language: str) -> bool:
    """Load the translator for ``language`` into the running application; ``en`` removes it.

    Returns True when the language is active. Widgets built before the switch keep their text:
    the app rebuilds its windows after a change.
    """
    global _installed
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("install_language needs a QCoreApplication")
    if _installed is not None:
        QCoreApplication.removeTranslator(_installed)
        _installed = None
    if language == "en":
        return True
    translator = QTranslator(app)
    qm = resource_path(f"translations/gputray_{language}.qm")
    if not translator.load(str(qm)):
        return False
    QCoreApplication.installTranslator(translator)
    _installed = translator
    return True
