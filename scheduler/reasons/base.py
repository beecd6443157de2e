"""The base of every reason code (``reasons.codes``): a frozen, tagged msgspec Struct whose class name is its
code on the wire and in the store."""

import msgspec


class Code(msgspec.Struct, frozen=True, kw_only=True, tag_field="code", tag=True):
    """The base of every reason; the class name is its code on the wire and in the store."""
