"""Encoded `Msg` values, ready for tx.encode_body."""

from . import schema, types


def msg(module, variant, fields):
    """`Msg::<module>(<variant> { fields })`, e.g. msg("Bank", "Send", {...})."""
    return schema.to_bytes(types.MSG, (module, (variant, fields)))


def bank_send(to, amount):
    return msg("Bank", "Send", {"to": to, "amount": amount})
