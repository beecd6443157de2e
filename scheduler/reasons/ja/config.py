"""Japanese words for a config file's problems (``reasons/config_codes.py``): the tray's banner. The
file's own words (its path, keys, values) stay as they are written."""

from __future__ import annotations

from gputray.scheduler.reasons import config_codes as k
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(k.NumberIn)
def _number(r: k.NumberIn, s: Say) -> str:
    what = "整数" if r.whole else "数値"
    return f"{r.low} … {r.high} の{what}" if r.low is not None and r.high is not None else what


@says(k.OneOf)
def _one_of(r: k.OneOf, s: Say) -> str:
    return "、".join(r.values) + " のいずれか"


@says(k.TextValue)
def _text(r: k.TextValue, s: Say) -> str:
    return "文字列"


@says(k.TrueFalse)
def _true_false(r: k.TrueFalse, s: Say) -> str:
    return "true か false"


@says(k.ListOfText)
def _list(r: k.ListOfText, s: Say) -> str:
    return "文字列のリスト"


@says(k.TableOfBools)
def _bools(r: k.TableOfBools, s: Say) -> str:
    return "true/false の値のテーブル"


@says(k.EitherOf)
def _either(r: k.EitherOf, s: Say) -> str:
    return "または".join(s(p) for p in r.parts)


@says(k.CheckSaid)
def _check_said(r: k.CheckSaid, s: Say) -> str:
    return r.text


@says(k.BadValue)
def _bad_value(r: k.BadValue, s: Say) -> str:
    then = {"default": f"{r.default} を使います", "unset": "未設定のままにします", "ignored": "無視します"}[
        r.then
    ]
    return f"{r.source}: {r.key} = {r.value} は {s(r.allowed)}ではありません。{then}"


@says(k.UnknownKey)
def _unknown(r: k.UnknownKey, s: Say) -> str:
    hint = f"{r.suggestion} の間違いでは？" if r.suggestion else f"使えるキー：{'、'.join(r.known)}"
    return f"{r.source}: 不明なキー {r.key}（{hint}）。無視します"


@says(k.NotATable)
def _not_a_table(r: k.NotATable, s: Say) -> str:
    return (
        f"{r.source}: [{r.key}] はテーブルでなければなりません（{r.value} になっています）。既定値を使います"
    )


@says(k.DevicesNotTables)
def _devices(r: k.DevicesNotTables, s: Say) -> str:
    return (
        f"{r.source}: [devices] は [devices.<name>] テーブルの集まりでなければなりません"
        f"（{r.value} になっています）"
    )


@says(k.DeviceNotTable)
def _device(r: k.DeviceNotTable, s: Say) -> str:
    return (
        f"{r.source}: devices.{r.name} は `slots = 2` のようなテーブルでなければなりません"
        f"（{r.value} になっています）"
    )


@says(k.EnvNotTables)
def _env_tables(r: k.EnvNotTables, s: Say) -> str:
    return f"{r.source}: env は [[env]] テーブルとして書いてください"


@says(k.EnvNamedTwice)
def _env_twice(r: k.EnvNamedTwice, s: Say) -> str:
    return f"{r.source}: 「{r.name}」という名前の環境が 2 つあります。名前は重複できません"


@says(k.BadLogSize)
def _bad_log_size(r: k.BadLogSize, s: Say) -> str:
    return (
        f"{r.source}: logs.max_size = {r.value} は 64 KiB 以上のサイズ"
        f'（"1GiB"・"500MB"・バイト数など）ではありません。"{r.default}" を使います'
    )
