"""Which source topic ACLs a mirror gets (pure rules of geokafka.control.acl_sync)."""

from __future__ import annotations

from geokafka.control.acl_sync import TopicAcl, mirrored_acls


def _rename(name: str) -> str:
    return f"east.{name}"


def acl(name: str, op: str, permission: str = "ALLOW", pattern: str = "LITERAL", who: str = "User:a") -> TopicAcl:
    return TopicAcl(name, pattern, who, "*", op, permission)


def test_read_side_allows_are_copied_and_renamed() -> None:
    got = mirrored_acls([acl("orders", "READ"), acl("orders", "DESCRIBE_CONFIGS")], ["orders"], _rename)
    assert got == {acl("east.orders", "READ"), acl("east.orders", "DESCRIBE_CONFIGS")}


def test_write_side_allows_never_reach_a_mirror() -> None:
    ops = ["WRITE", "CREATE", "DELETE", "ALTER", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"]
    assert mirrored_acls([acl("orders", op) for op in ops], ["orders"], _rename) == set()


def test_allow_all_becomes_read_and_describe() -> None:
    assert mirrored_acls([acl("orders", "ALL")], ["orders"], _rename) == {
        acl("east.orders", "READ"), acl("east.orders", "DESCRIBE")}


def test_denies_are_copied_as_they_are() -> None:
    got = mirrored_acls([acl("orders", "WRITE", "DENY"), acl("orders", "ALL", "DENY")], ["orders"], _rename)
    assert got == {acl("east.orders", "WRITE", "DENY"), acl("east.orders", "ALL", "DENY")}


def test_only_selected_topics_and_covering_prefixes() -> None:
    source = [acl("payments", "READ"), acl("*", "READ"), acl("ord", "READ", pattern="PREFIXED"),
              acl("pay", "READ", pattern="PREFIXED"), acl("orders", "READ", pattern="MATCH")]
    assert mirrored_acls(source, ["orders"], _rename) == {acl("east.ord", "READ", pattern="PREFIXED")}


def test_identity_naming_keeps_names() -> None:
    assert mirrored_acls([acl("orders", "READ")], ["orders"], lambda n: n) == {acl("orders", "READ")}
