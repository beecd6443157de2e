"""Japanese words for the Python envs a torch task runs in (``pyenvs/choice.py``)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _demo, _flat, _where
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.EnvChecking)
def _env_checking(r: c.EnvChecking, s: Say) -> str:
    return f"{_where(r.device)} で環境 {r.env} を{s.tense('確認中', '確認中でした')}{_demo(r.demo_for)}…"


@says(c.NoEnvWorks)
def _no_env_works(r: c.NoEnvWorks, s: Say) -> str:
    text = f"{_where(r.device)} で動く Python 環境がありません{_demo(r.demo_for)}"
    if r.failures:
        text += "：" + "、".join(f"{f.env}: {s(f.why)}" for f in r.failures)
    return text + (f"。対処：{s(r.fix)}" if r.fix else "")


@says(c.NoEnvKnown)
def _no_env_known(r: c.NoEnvKnown, s: Say) -> str:
    return f"{_where(r.device)} で動くと分かっている Python 環境がありません"


@says(c.NoEnvConfigured)
def _no_env_configured(r: c.NoEnvConfigured, s: Say) -> str:
    add = f"追加：{r.command}（`pip install torch` を実行した venv）"
    if r.demo:
        return f"デモ：torch ジョブは torch のある環境で CPU 上で動きます。{add}"
    return f"torch ジョブ用の Python 環境が設定されていません。{add}"


@says(c.EnvUnproven)
def _env_unproven(r: c.EnvUnproven, s: Say) -> str:
    unproven = "その torch がこの GPU を使うことは確認できていません"
    anyway = s.tense(
        "allow_unproven = true のタスクはそこで実行します",
        "allow_unproven = true のタスクならそこで実行できました",
    )
    return f"環境 {r.env} は {_where(r.device)} で動きますが、{unproven}（{_flat(s.text(r.why))}）。{anyway}"


@says(c.EnvListUnreadable)
def _env_list(r: c.EnvListUnreadable, s: Say) -> str:
    return f"環境の一覧を読めません: {r.error}"


@says(c.EnvLookupFailed)
def _env_lookup(r: c.EnvLookupFailed, s: Say) -> str:
    return f"環境の検索に失敗しました（{r.error}）"
