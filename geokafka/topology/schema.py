"""The typed schema of the topology file (``geokafka.yaml``).

Every key is declared here once, with its default and a one-line doc; unknown keys are
rejected. Secrets are never values in the file: only references to env vars or files.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from geokafka.errors import TopologyError

log = logging.getLogger(__name__)

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$"
Name = Annotated[str, Field(pattern=_NAME)]
Port = Annotated[int, Field(ge=1024, le=65535)]


MIN_HEAP_MB = 256
"""Smallest JVM heap a local Kafka node is started with.

Every broker starts a log cleaner (the internal topics are compacted) whose offset map is one
heap buffer of ``log.cleaner.dedupe.buffer.size``, 128 MiB by default, allocated at start; with
``-XX:+ExitOnOutOfMemoryError`` a 128 MiB heap dies there. 256 leaves 128 MiB for the rest of a
small node (request buffers up to the 8 MiB message.max.bytes of local clusters, KRaft metadata);
the stretch drill's nodes run at 256.
"""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


RENAMED_PIPELINE_KEYS = {"groups": ("partition_groups", "a flow's groups are its consumer groups")}
"""Old pipeline keys: their new names, and why they changed. Still read, with a warning."""


def renamed_keys(data: Any, renamed: dict[str, tuple[str, str]], where: str) -> Any:
    """``data`` with each old key of ``renamed`` under its new name, said as a one-line warning; an error when
    both names are given."""
    if not isinstance(data, dict) or not renamed.keys() & data.keys():
        return data
    data = dict(data)
    for old, (new, why) in renamed.items():
        if old not in data:
            continue
        if new in data:
            raise ValueError(f"{old} is the old name of {new}: give {new} only")
        log.warning("topology: %s.%s is now %s.%s (%s); read as %s, rename it in the file", where, old, where, new,
                    why, new)
        data[new] = data.pop(old)
    return data


def _check_regexes(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"regex {pattern!r} does not compile: {exc}") from exc
    return patterns


# Keys of Kafka (Java and librdkafka), Spark and broker settings whose values are secrets: they
# are never plain values in the topology, not even in the free-form maps.
_SECRET_KEY = re.compile(r"password|secret|jaas|credential|keystore\.key|ssl\.key\.pem|private[._]?key"
                         r"|oauthbearer\.config", re.IGNORECASE)
_NOT_SECRET_KEY = re.compile(r"^password\.encoder\.(cipher\.algorithm|iterations|key\.length|keyfactory\.algorithm)$")


def _not_a_secret_key(key: str) -> str:
    if _SECRET_KEY.search(key) and not _NOT_SECRET_KEY.match(key):
        raise ValueError("holds a secret, which is never a plain value in the topology: give it in the "
                         "cluster's security block, by reference ({env: VAR} or {file: PATH})")
    return key


def _not_a_secret_value(value: str) -> str:
    if "loginmodule" in value.lower():
        raise ValueError("a JAAS login module line holds credentials: give them in the cluster's security block")
    return value


ConfigMap = dict[Annotated[str, AfterValidator(_not_a_secret_key)], Annotated[str, AfterValidator(_not_a_secret_value)]]
"""A free-form settings map (client, broker, producer, Spark): anything but secrets."""


class SecretRef(_Model):
    """Where a secret lives: exactly one of an environment variable or a file."""

    env: str | None = Field(None, description="name of the environment variable holding it")
    file: Path | None = Field(None, description="path of a file holding it (trailing newline stripped)")

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of 'env' or 'file'")
        return self


class Security(_Model):
    """How clients authenticate to a cluster (TLS and/or SASL)."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="security.protocol of the cluster's client listener")
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        None, description="SASL mechanism (SASL_* protocols)")
    username: str | None = Field(None, description="SASL user name (not a secret; the password is)")
    password: SecretRef | None = Field(None, description="SASL password, by reference only")
    ca_file: Path | None = Field(None, description="PEM CA bundle that signed the brokers' certificates")
    cert_file: Path | None = Field(None, description="client certificate (PEM), for mutual TLS")
    key_file: Path | None = Field(None, description="client private key (PEM), for mutual TLS")
    key_password: SecretRef | None = Field(None, description="password of an encrypted key_file: {env: VAR} or {file: PATH}")

    @field_validator("password", "key_password", mode="before")
    @classmethod
    def _no_inline_secret(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("secrets are not allowed inline: use {env: VAR} or {file: PATH}")
        return value

    @model_validator(mode="after")
    def _sasl_complete(self) -> Security:
        if self.protocol.startswith("SASL"):
            if self.sasl_mechanism is None or self.username is None or self.password is None:
                raise ValueError(f"protocol {self.protocol} needs sasl_mechanism, username and password")
        return self


Jit = Literal["full", "quick"]
JIT_HELP = (
    "the JVM's just-in-time compilers: full (quick then optimizing, the JVM's default: the least CPU "
    "per record once warm, for long runs and benchmarks) or quick (the quick compiler only: about half "
    "the CPU in a JVM's first minutes, for a demo or drill that runs a few JVMs for a minute on a small machine)")


class LocalCluster(_Model):
    """A cluster that ``geokafka up`` starts on this machine (real KRaft brokers)."""

    brokers: int = Field(1, ge=1, le=9, description="number of broker processes")
    racks: list[str] | None = Field(None, description="broker.rack of each broker, in order")
    controllers: int | None = Field(
        None, ge=1, le=5, description="KRaft controller count (default: min(brokers, 3) combined, 1 separate)"
    )
    mode: Literal["combined", "separate"] = Field(
        "combined", description="controllers inside broker processes, or as processes of their own"
    )
    port: Port | None = Field(None, description="port of broker 0 (default: the bootstrap port); broker i uses port+i")
    controller_port: Port | None = Field(None, description="port of controller 0 (default: port+100)")
    heap_mb: int = Field(384, ge=MIN_HEAP_MB, le=8192, description=(
        f"JVM heap of each process (at least {MIN_HEAP_MB}: the log cleaner alone takes 128 at start)"))
    broker_config: ConfigMap = Field(default_factory=dict, description="extra server.properties entries")
    jit: Jit = Field("full", description=JIT_HELP)

    @model_validator(mode="after")
    def _racks_match(self) -> LocalCluster:
        if self.racks is not None and len(self.racks) != self.brokers:
            raise ValueError(f"racks lists {len(self.racks)} entries but brokers is {self.brokers}")
        if self.mode == "combined" and self.controllers is not None and self.controllers > self.brokers:
            raise ValueError("combined mode cannot have more controllers than brokers")
        return self

    @property
    def controller_count(self) -> int:
        """Controllers actually started."""
        if self.controllers is not None:
            return self.controllers
        return min(self.brokers, 3) if self.mode == "combined" else 1


class Cluster(_Model):
    """One Kafka cluster: how to reach it, and optionally how to start it locally."""

    bootstrap: str = Field(description="host:port[,host:port...] of the brokers")
    local: LocalCluster | None = Field(None, description="start this cluster on this machine with `geokafka up`")
    security: Security = Field(
        default_factory=Security, description="how clients connect; a local cluster's brokers listen the same way"
    )
    client_config: ConfigMap = Field(default_factory=dict, description="extra librdkafka settings")

    @field_validator("bootstrap")
    @classmethod
    def _bootstrap_shape(cls, value: str) -> str:
        for part in value.split(","):
            host, sep, port = part.strip().rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{part.strip()!r} is not host:port")
        return value

    @model_validator(mode="after")
    def _local_security(self) -> Cluster:
        # A local cluster's brokers get a listener of security.protocol, with a CA and
        # certificates geokafka generates and SASL users it creates from these settings.
        if self.local is None:
            return self
        sec = self.security
        for key in ("ca_file", "cert_file", "key_file", "key_password"):
            if getattr(sec, key) is not None:
                raise ValueError(
                    f"security.{key} cannot be set on a local cluster: geokafka generates its CA and broker "
                    "certificate and clients trust that CA (mutual TLS is not supported locally)"
                )
        if sec.username is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", sec.username):
            raise ValueError(
                f"security.username {sec.username!r}: a local cluster's SASL user may only use letters, digits, '.', '_', '-'"
            )
        return self

    @property
    def bootstrap_port(self) -> int:
        """Port of the first bootstrap address."""
        return int(self.bootstrap.split(",")[0].rpartition(":")[2])

    @property
    def bootstrap_host(self) -> str:
        """Host of the first bootstrap address."""
        return self.bootstrap.split(",")[0].strip().rpartition(":")[0]


SyncKind = Literal["configs", "partitions", "acls", "group-offsets"]


class Transform(_Model):
    """Optional compliance transforms, as Spark SQL expressions over the record columns."""

    filter: str | None = Field(None, description="keep only records for which this is true")
    key: str | None = Field(None, description="expression replacing the key (binary or string)")
    value: str | None = Field(None, description="expression replacing the value (binary or string)")


class Flow(_Model):
    """Asynchronous replication of topics from one cluster to another."""

    source: Name = Field(description="cluster the flow reads from")
    target: Name = Field(description="cluster the flow writes to (where its state lives)")
    topics: list[str] = Field(default_factory=lambda: [".*"], description="regexes of topics to replicate")
    exclude: list[str] = Field(default_factory=list, description="regexes of topics never to replicate")
    rename: Literal["prefix", "identity"] = Field("prefix", description="'<source>.<topic>' or the same name")
    separator: str = Field(
        ".", pattern=r"^[A-Za-z0-9._-]{1,3}$", description="separator of prefix naming (characters legal in topic names)"
    )
    groups: list[str] = Field(default_factory=list, description="regexes of consumer groups whose offsets follow")
    exclude_groups: list[str] = Field(default_factory=list, description="regexes of groups never synced, even if matched")
    sync: list[SyncKind] = Field(default_factory=lambda: list[SyncKind](["configs", "partitions", "acls"]),
                                 description="what follows the source besides records: configs, partitions, acls, group-offsets")
    config_exclude: list[str] = Field(default_factory=list, description=(
        "regexes (full match) of topic configs the config sync never sets or removes on the target, so target-only "
        "overrides survive (MirrorMaker 2's config.properties.exclude)"))
    sync_interval_s: float = Field(10.0, gt=0, le=3600, description="period of config/partition/offset sync")
    start: Literal["earliest", "latest"] = Field("earliest", description="where a never-replicated partition starts")
    skip_gaps: bool = Field(False, description="log and count truncated ranges instead of stopping")
    transform: Transform | None = Field(None, description="record filter and field masks, as Spark SQL")
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] | None = Field(None, description=(
        "how the writer compresses the batches it sends to the target (the producer's compression.type); default: "
        "the pipeline's producer_config compression.type if it names one, else lz4; none only for data that does "
        "not compress (already compressed or encrypted values)"))

    _regexes = field_validator("topics", "exclude", "groups", "exclude_groups", "config_exclude")(_check_regexes)

    @model_validator(mode="after")
    def _not_self(self) -> Flow:
        if self.source == self.target:
            raise ValueError(f"source and target are both {self.source!r}")
        return self


class Pipeline(_Model):
    """The Spark side: where queries run and how they batch."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        return renamed_keys(data, RENAMED_PIPELINE_KEYS, "pipeline")

    master: str = Field("local[*]", description=(
        "Spark master: local[N] (N task threads in this process; local[*]: one per core), spark://..., k8s://..., "
        "yarn"))
    state_dir: Path = Field(Path(".geokafka/state"), description="local clusters' data, logs and run state")
    mode: Literal["real-time", "micro-batch"] = Field("real-time", description=(
        "real-time: each partition group's task runs for a whole batch (realtime_batch_s), reading records as they "
        "come and committing every commit_interval_ms (Spark's real-time mode); micro-batch: a batch every "
        "trigger_ms, its records planned up front (the fallback; needs no task slot per group)"))
    partition_groups: int = Field(0, ge=0, le=4096, description=(
        "partition groups per flow: one Spark task, one consumer and one transactional producer each, over many "
        "source partitions; 0 = the master's task slots shared by the mirror's flows (at least 1 each). Formerly "
        "`groups` (a flow's `groups` are consumer groups), still read, with a warning"))
    realtime_batch_s: float = Field(300.0, ge=5, le=86_400, description=(
        "real-time mode: how long one batch of long-running tasks lasts before Spark checkpoints and starts the "
        "next (records arriving in between wait a few hundred ms)"))
    trigger_ms: int = Field(200, ge=0, le=600_000, description="micro-batch mode: batch interval (0 = as fast as possible)")
    max_records_per_batch: int = Field(100_000, ge=1, description=(
        "micro-batch mode: maxOffsetsPerTrigger per query (bounds batch time)"))
    commit_interval_ms: int = Field(100, ge=10, le=600_000, description=(
        "each partition group's writer commits its open transaction (its records and the progress of every "
        "partition that moved) this often, so read_committed consumers of the target see records within about "
        "this long at most; while commits are slow (a backlog) the interval stretches so committing takes at most "
        "a tenth of the writer's time, to at most 2 s"))
    caught_up_commit_ms: int = Field(2, ge=1, le=600_000, description=(
        "a group whose reader has caught up with its source (the partitions of its last read have nothing more on "
        "the source) commits this long after its previous commit at the earliest instead of waiting for "
        "commit_interval_ms: records become visible within a fetch and a commit at moderate rates, while a backlog "
        "still commits once per interval"))
    producer_config: ConfigMap = Field(default_factory=dict, description=(
        "Java producer settings of the writer (e.g. linger.ms, or compression.type for every flow that names none "
        "itself); transactional settings are geokafka's"))
    topic_refresh_s: float = Field(30.0, gt=0, le=3600, description="how often topic selection is re-evaluated")
    spark_conf: ConfigMap = Field(default_factory=dict, description="extra Spark configuration")
    jit: Jit = Field("full", description=JIT_HELP + (
        " (of the Spark driver and executors; with full, the optimizing compiler waits for ten times the "
        "JVM's default calls, so Spark's start-up code is left to the quick one)"))


class Rpo(_Model):
    """How the running mirror watches what a failover would lose."""

    observe_ms: int = Field(250, ge=50, le=60_000, description=(
        "how often a running mirror reads the source's end offsets (one ListOffsets request per broker) and "
        "keeps them on the target: after a disaster, records written since the last look can only be bounded, "
        "at the source's peak write rate, so a shorter interval keeps the RPO interval narrow. Looking takes "
        "at most 2% of a core where it can: at thousands of partitions (about 10 microseconds of CPU each per look) "
        "the mirror looks less often than this, but at least every 0.75 s (at 2,000 partitions about 2.7% of a "
        "core), says so once, and every RPO figure carries the look's age"))


class FailoverPolicy(_Model):
    """Automatic failover of a lost site's flows by `geokafka guard --sites`: opt-in, never the default."""

    automatic: bool = Field(False, description=(
        "let `geokafka guard --sites` fail a lost site's flows over on its own; without it the guard only says "
        "what it would do (--dry-run)"))
    confirm_s: float = Field(30.0, ge=5, le=3600, description=(
        "a site counts as lost once neither the guard nor any flow's mirror has reached it for this long "
        "without a break"))
    max_rpo_records: int | None = Field(None, ge=0, description=(
        "fail over only when every flow's RPO upper bound (records) is at most this; else wait for a person. "
        "Required with automatic: true"))
    interval_s: float = Field(1.0, gt=0, le=60, description="how often the guard looks at the sites")

    @model_validator(mode="after")
    def _bounded(self) -> FailoverPolicy:
        if self.automatic and self.max_rpo_records is None:
            raise ValueError("automatic: true needs max_rpo_records: the most records a failover may lose unasked")
        return self


class StretchDC(_Model):
    """One data center of a stretched cluster."""

    brokers: int = Field(0, ge=0, le=32, description="brokers in this DC")
    controllers: int = Field(0, ge=0, le=9, description="KRaft controllers in this DC")
    observers: int = Field(0, ge=0, le=32, description="brokers holding asynchronous observer replicas")


class StretchTopic(_Model):
    """Replication settings of one topic of a stretched cluster."""

    partitions: int = Field(6, ge=1, le=10_000, description="partitions of the topic")
    replication_factor: int = Field(3, ge=1, le=32, description="replicas per partition, spread over the DCs")
    min_insync_replicas: int = Field(2, ge=1, le=32, description="min.insync.replicas of the topic")
    acks: Literal["all", "1", "0"] = Field("all", description=(
        "producers' acks: all (Kafka's synonym -1 is read as all), 1 or 0"))
    unclean_leader_election: bool = Field(False, description="unclean.leader.election.enable (may lose acked records)")

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_as_text(cls, value: Any) -> Any:
        # YAML reads `acks: 1` as a number; Kafka reads acks=-1 as acks=all.
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        return "all" if text == "-1" else text


class StretchGuard(_Model):
    """How `geokafka guard` handles a DC loss of the stretched cluster."""

    grace_s: float = Field(30.0, ge=1, le=3600, description=(
        "a DC counts as lost once every broker in it was unreachable or fenced this long without a break"))
    interval_s: float = Field(1.0, gt=0, le=60, description="how often the guard looks at the cluster")


MAX_STRETCH_DCS = 16
MAX_STRETCH_TOPICS = 100
MAX_STRETCH_PARTITIONS = 10_000
MAX_PLAN_OUTCOMES = 250_000
"""Partition outcomes a plan may judge: (DCs + nodes, each lost alone) x partitions, about 1.5 s of planning.

The verdicts do not change with more partitions than a few per broker: plan with fewer."""


class Stretch(_Model):
    """One cluster stretched over several DCs (synchronous replication)."""

    dcs: dict[Name, StretchDC] = Field(max_length=MAX_STRETCH_DCS, description="the DCs, each one broker.rack")
    topics: dict[str, StretchTopic] = Field(
        default_factory=lambda: {"default": StretchTopic()}, max_length=MAX_STRETCH_TOPICS,
        description="topics by name; the keys of one topic alone stand for a topic called 'default'")
    base_port: Port = Field(31092, description="first loopback port of the drill's local cluster")
    cluster: Name | None = Field(None, description=(
        "the cluster (in clusters:) that is this stretched cluster, for `geokafka guard`; its brokers' "
        "broker.rack must be the DC names"))
    guard: StretchGuard = Field(default_factory=StretchGuard, description="automatic DC-loss handling")

    @field_validator("topics", mode="before")
    @classmethod
    def _single_topic_shorthand(cls, value: Any) -> Any:
        # `topics: {replication_factor: 3, ...}` describes one default topic.
        if isinstance(value, dict) and value and set(value) <= set(StretchTopic.model_fields):
            return {"default": value}
        return value

    @model_validator(mode="after")
    def _has_brokers(self) -> Stretch:
        if not self.dcs:
            raise ValueError("needs at least one DC")
        if sum(dc.brokers for dc in self.dcs.values()) == 0:
            raise ValueError("no DC has brokers")
        if sum(dc.controllers for dc in self.dcs.values()) == 0:
            raise ValueError("no DC has KRaft controllers")
        return self

    @model_validator(mode="after")
    def _plan_is_bounded(self) -> Stretch:
        # `geokafka plan` judges every partition under the loss of every DC and of every node.
        brokers = sum(dc.brokers + dc.observers for dc in self.dcs.values())
        if brokers > 1000:  # controllers are numbered from 1001 (planning.layout)
            raise ValueError(f"{brokers:,} brokers (observers included), more than the 1,000 a plan numbers")
        partitions = sum(t.partitions for t in self.topics.values())
        if partitions > MAX_STRETCH_PARTITIONS:
            raise ValueError(f"the topics have {partitions:,} partitions in all, more than the "
                             f"{MAX_STRETCH_PARTITIONS:,} a plan places")
        failures = len(self.dcs) + sum(dc.brokers + dc.observers + dc.controllers for dc in self.dcs.values())
        if failures * partitions > MAX_PLAN_OUTCOMES:
            raise ValueError(
                f"a plan would judge {failures} failures x {partitions:,} partitions = {failures * partitions:,} "
                f"outcomes, more than {MAX_PLAN_OUTCOMES:,}; verdicts do not change with more partitions than a few "
                f"per broker, so plan with fewer")
        return self


class Topology(_Model):
    """The whole topology file."""

    clusters: dict[Name, Cluster] = Field(default_factory=dict, description=(
        "the Kafka clusters by name; required unless the file only plans a stretched cluster (stretch:)"))
    flows: dict[Name, Flow] = Field(default_factory=dict, description="replication flows between the clusters")
    pipeline: Pipeline = Field(default_factory=Pipeline, description="where and how flows run on Spark")
    rpo: Rpo = Field(default_factory=Rpo, description="how the RPO of every flow is observed while it runs")
    failover: FailoverPolicy = Field(default_factory=FailoverPolicy, description=(
        "when a lost site's flows fail over without a person (`geokafka guard --sites`)"))
    stretch: Stretch | None = Field(None, description="a stretched cluster to plan, drill and guard")

    def flow(self, name: str) -> Flow:
        """The flow called ``name``; a TopologyError naming the known flows otherwise."""
        if name not in self.flows:
            raise TopologyError(f"unknown flow {name!r} (known: {', '.join(sorted(self.flows)) or 'none'})")
        return self.flows[name]
