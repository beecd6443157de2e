"""English and Japanese UI through Qt's own translators.

Every user-visible string goes through :func:`tr` (or :func:`trn`, a sentence about a number of
things), one translation context (``gputray``), compiled into ``resources/translations/gputray_ja.qm``;
``gputray_en.qm`` holds only the English plural forms of the :func:`trn` sentences. Qt's own strings
(the standard buttons OK, Cancel, Save …, the context menus of text fields) come from Qt's
``qtbase_ja.qm``, shipped with PySide6. What the queue and the monitor say (reasons, errors) is
worded by ``gui/messages.py`` from their codes.

The language follows the system locale unless the config says ``[gui] language = "en" | "ja"``.
Installing or removing a translator makes Qt send every widget a ``LanguageChange`` event: the
windows re-set their texts then (``retranslate``), so a switch needs no restart and no rebuild.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

from gputray.resources import resource_path

CONTEXT = "gputray"
LANGUAGES = ("auto", "en", "ja")

_installed: list[QTranslator] = []
_language = "en"
_generation = 0


def tr(text: str) -> str:
    return QCoreApplication.translate(CONTEXT, text)


def trn(text: str, n: int) -> str:
    """A sentence about ``n`` things, in the plural form ``n`` takes in the current language (Qt's
    numerus forms: ``%n`` is ``n``). English has its forms too (``gputray_en.qm``, plural messages
    only): "1 file will become 1 job", "2 files will become 2 jobs", never "1 file(s)"."""
    if not _installed and _language == "en" and QCoreApplication.instance() is not None:
        install_language("en")  # the English plural forms, before the app installed any language
    return QCoreApplication.translate(CONTEXT, text, None, n)


def tr_noop(text: str) -> str:
    """Marks a constant for translation (the .ts check finds it); ``tr`` translates it where shown."""
    return text


def current_language() -> str:
    return _language


def generation() -> int:
    """Bumped on every switch: caches of translated text key on it."""
    return _generation


def resolve_language(setting: str | None, locale_name: str | None = None) -> str:
    """``auto`` (or anything unknown) follows the locale: ``ja_JP`` → ``ja``, everything else → ``en``."""
    if setting in ("en", "ja"):
        return setting
    name = locale_name if locale_name is not None else QLocale.system().name()
    return "ja" if name.lower().startswith("ja") else "en"


def qt_translations_dir() -> str:
    return QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)


def install_language(language: str) -> bool:
    """Load the translators for ``language`` into the running application; ``en`` removes them.

    Returns True when the language is active. Open windows are retranslated through the
    ``LanguageChange`` event Qt sends when a translator comes or goes.
    """
    global _language, _generation
    app = QCoreApplication.instance()
    if app is None:
        raise RuntimeError("install_language needs a QCoreApplication")
    if language == _language and _installed:
        return True
    for old in _installed:
        QCoreApplication.removeTranslator(old)
    _installed.clear()
    _language = "en"
    _generation += 1
    if language == "en":
        english = QTranslator(app)  # English plural forms only: every other string is its own source
        if english.load(str(resource_path("translations/gputray_en.qm"))):
            QCoreApplication.installTranslator(english)
            _installed.append(english)
        return True
    ours = QTranslator(app)
    if not ours.load(str(resource_path(f"translations/gputray_{language}.qm"))):
        return False
    qt_base = QTranslator(app)
    if qt_base.load(f"qtbase_{language}", qt_translations_dir()):
        QCoreApplication.installTranslator(qt_base)
        _installed.append(qt_base)
    QCoreApplication.installTranslator(ours)
    _installed.append(ours)
    _language = language
    _generation += 1
    return True
