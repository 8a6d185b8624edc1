"""Spark's stderr in geokafka's log: what a stop of geokafka's own makes at debug level, everything else at info.

The records are as a restart of a real query wrote them (tests/integration/test_quiet_restarts.py runs one)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from geokafka.pipeline.spark_log import GRACE_S, SparkLogForwarder, SparkRecord, Stops, made_by_a_stop

INTERRUPTED_TASK = """\
03:16:49 ERROR Utils: Aborting task
io.geokafka.spark.GeokafkaException: source group 1 [quiet-a-1]: InterruptException: java.lang.InterruptedException
\tat io.geokafka.spark.KafkaErrors.of(KafkaErrors.java:40) ~[geokafka-spark.jar:?]
\tat io.geokafka.spark.GroupReader.poll(GroupReader.java:184) ~[geokafka-spark.jar:?]
Caused by: org.apache.kafka.common.errors.InterruptException: java.lang.InterruptedException
\tat org.apache.kafka.clients.consumer.internals.ConsumerNetworkClient.poll(ConsumerNetworkClient.java:298)
\t... 12 more
Caused by: java.lang.InterruptedException
\tat org.apache.kafka.clients.consumer.internals.ConsumerNetworkClient.poll(ConsumerNetworkClient.java:298)
\t... 12 more""".splitlines()

FENCED_TASK = """\
03:16:49 ERROR Utils: Aborting task
io.geokafka.spark.GeokafkaException: sink group 0: ProducerFencedException: there is a newer producer
\tat io.geokafka.spark.KafkaErrors.of(KafkaErrors.java:40) ~[geokafka-spark.jar:?]
\tSuppressed: java.lang.InterruptedException
\t\tat java.base/java.lang.Thread.sleep(Native Method)
Caused by: org.apache.kafka.common.errors.ProducerFencedException: there is a newer producer
\tat org.apache.kafka.clients.producer.internals.TransactionManager.fail(TransactionManager.java:1)""".splitlines()

SPARK_STOPPED_UNDER_THE_QUERY = """\
04:08:02 ERROR MicroBatchExecution: Query geokafka-quiet-65791021 [id = ab0de54d, runId = 59977a30] terminated with error
org.apache.spark.SparkException: Job 1 cancelled because SparkContext was shut down
\tat org.apache.spark.scheduler.DAGScheduler.$anonfun$cleanUpAfterSchedulerStop$1(DAGScheduler.scala:1309)
\tat org.apache.spark.scheduler.DAGScheduler.cleanUpAfterSchedulerStop(DAGScheduler.scala:1307)
\tat org.apache.spark.SparkContext.stop(SparkContext.scala:2308)
\tat org.apache.spark.util.SparkShutdownHook.run(ShutdownHookManager.scala:231)
\tat org.apache.spark.scheduler.DAGScheduler.runJob(DAGScheduler.scala:1017)""".splitlines()
"""What a query's job says when Spark's own shutdown hook stops it (every process of a service got SIGTERM)."""

BROADCAST_DROPPED_UNDER_A_TASK = """\
10:22:00 ERROR TaskContextImpl: Error in TaskCompletionListener
org.apache.spark.SparkException: Block broadcast_0 does not exist
\tat org.apache.spark.errors.SparkCoreErrors$.blockDoesNotExistError(SparkCoreErrors.scala:309)
\tat org.apache.spark.storage.BlockInfoManager.blockInfo(BlockInfoManager.scala:268)
\tat org.apache.spark.storage.BlockInfoManager.unlock(BlockInfoManager.scala:389)
\tat org.apache.spark.storage.BlockManager.releaseLock(BlockManager.scala:1349)
\tat org.apache.spark.broadcast.TorrentBroadcast.$anonfun$releaseBlockManagerLock$1(TorrentBroadcast.scala:323)
\tat org.apache.spark.TaskContext$$anon$1.onTaskCompletion(TaskContext.scala:146)
\tat java.base/java.lang.Thread.run(Thread.java:840)""".splitlines()
"""What a real-time query's task wrote when SIGTERM stopped a mirror of 2,000 partitions (Spark dropped the task's
broadcast before the task completed; the jar names after each frame left out)."""

QUERY_THREAD_DIED_AS_SPARK_STOPPED = """\
Exception in thread "stream execution thread for geokafka-quiet-5aedcc5e [id = a58bbadd, runId = af4cf149]" or\
g.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:53)
\tat org.apache.spark.util.ThreadUtils$.awaitResult(ThreadUtils.scala:359)
\tat org.apache.spark.rpc.RpcTimeout.awaitResult(RpcTimeout.scala:75)
\tat org.apache.spark.rpc.RpcEndpointRef.askSync(RpcEndpointRef.scala:101)
\tat org.apache.spark.rpc.RpcEndpointRef.askSync(RpcEndpointRef.scala:85)
\tat org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef.deactivateInstances(StateStoreCoo\
rdinator.scala:177)
\tat org.apache.spark.sql.classic.StreamingQueryManager.notifyQueryTermination(StreamingQueryManager.scala:383)
\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution.$anonfun$runStream$5(StreamExecution.scala:417)
\tat scala.runtime.java8.JFunction0$mcV$sp.apply(JFunction0$mcV$sp.scala:18)
\tat org.apache.spark.util.UninterruptibleThread.runUninterruptibly(UninterruptibleThread.scala:152)
\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution.org$apache$spark$sql$execution$streaming\
$runtime$StreamExecution$$runStream(StreamExecution.scala:396)
\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution$$anon$1.run(StreamExecution.scala:230)
Caused by: org.apache.spark.rpc.RpcEnvStoppedException: RpcEnv already stopped.
\tat org.apache.spark.rpc.netty.Dispatcher.postMessage(Dispatcher.scala:179)
\tat org.apache.spark.rpc.netty.Dispatcher.postLocalMessage(Dispatcher.scala:146)
\tat org.apache.spark.rpc.netty.NettyRpcEnv.askAbortable(NettyRpcEnv.scala:245)
\tat org.apache.spark.rpc.netty.NettyRpcEndpointRef.askAbortable(NettyRpcEnv.scala:561)
\tat org.apache.spark.rpc.netty.NettyRpcEndpointRef.ask(NettyRpcEnv.scala:565)
\tat org.apache.spark.rpc.RpcEndpointRef.askSync(RpcEndpointRef.scala:100)
\t... 8 more""".splitlines()
"""What the JVM printed when every process of a mirror got SIGTERM: the query's thread ended while Spark's shutdown
hook had already stopped its RPC environment, and died of the exception (no logger: the JVM's own print)."""

STATUS_AFTER_THE_POOL_ENDED = """\
12:01:55 ERROR TaskSchedulerImpl: Exception in statusUpdate
java.util.concurrent.RejectedExecutionException: Task org.apache.spark.scheduler.TaskResultGetter$$Lambda$3323/0x0\
0007fb70c3fcce8@7a8c639 rejected from java.util.concurrent.ThreadPoolExecutor@8293a1a[Terminated, pool size = 0, \
active threads = 0, queued tasks = 0, completed tasks = 2]
\tat java.base/java.util.concurrent.ThreadPoolExecutor$AbortPolicy.rejectedExecution(ThreadPoolExecutor.java:2065)
\tat org.apache.spark.scheduler.TaskResultGetter.enqueueFailedTask(TaskResultGetter.scala:140)
\tat org.apache.spark.scheduler.TaskSchedulerImpl.statusUpdate(TaskSchedulerImpl.scala:786)
\tat java.base/java.lang.Thread.run(Thread.java:840)""".splitlines()
"""What Spark wrote when every process of a mirror got SIGTERM: a task's status came after Spark's stop had shut the
scheduler's result getter down (frames trimmed, the jar names after them left out)."""

QUERY_THREAD_DIED_ON_A_SHUT_POOL = """\
Exception in thread "stream execution thread for geokafka-quiet-4466ca9f [id = 84c90f8c, runId = abaff65a]" org.ap\
ache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:53)
\tat org.apache.spark.rpc.RpcEndpointRef.askSync(RpcEndpointRef.scala:101)
\tat org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef.deactivateInstances(StateStoreCoo\
rdinator.scala:177)
\tat org.apache.spark.sql.classic.StreamingQueryManager.notifyQueryTermination(StreamingQueryManager.scala:383)
\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution$$anon$1.run(StreamExecution.scala:230)
Caused by: java.util.concurrent.RejectedExecutionException: Task java.util.concurrent.ScheduledThreadPoolExecutor$Sc\
heduledFutureTask@48cbad23[Not completed, task = java.util.concurrent.Executors$RunnableAdapter@31fb4da9[Wrapped ta\
sk = org.apache.spark.rpc.netty.NettyRpcEnv$$anon$1@2741eadf]] rejected from java.util.concurrent.ScheduledThreadPo\
olExecutor@5612f97[Terminated, pool size = 0, active threads = 0, queued tasks = 0, completed tasks = 0]
\tat java.base/java.util.concurrent.ThreadPoolExecutor$AbortPolicy.rejectedExecution(ThreadPoolExecutor.java:2065)
\tat org.apache.spark.rpc.netty.NettyRpcEnv.askAbortable(NettyRpcEnv.scala:270)
\tat org.apache.spark.rpc.RpcEndpointRef.askSync(RpcEndpointRef.scala:100)
\t... 8 more""".splitlines()
"""The same death with another cause, from a clean-clone run of 2026-12-04: the query's thread asked through Spark's
RPC environment after Spark's stop had shut the environment's timeout pool down (frames trimmed)."""

FAILED_JOB = """\
04:08:02 ERROR MicroBatchExecution: Query geokafka-quiet-65791021 [id = ab0de54d, runId = 59977a30] terminated with error
org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)
\tat org.apache.spark.scheduler.DAGScheduler.runJob(DAGScheduler.scala:1017)""".splitlines()

ABORT_LINES = ["03:16:49 ERROR DataWritingSparkTask: Aborting commit for partition 1 (task 1, attempt 0, stage 0.0)",
               "03:16:49 ERROR DataWritingSparkTask: Aborted commit for partition 1 (task 1, attempt 0, stage 0.0)",
               "03:16:49 ERROR WriteToDataSourceV2Exec: Data source write support MicroBatchWrite[epoch: 0] is aborting."]


def record(lines: list[str]) -> SparkRecord:
    rec = SparkRecord.starting(lines[0])
    for line in lines[1:]:
        assert rec.continued_by(line), line
        rec.lines.append(line)
    return rec


def test_a_record_reads_its_level_logger_and_causes() -> None:
    rec = record(INTERRUPTED_TASK)
    assert (rec.level, rec.logger, rec.message) == ("ERROR", "Utils", "Aborting task")
    assert rec.causes == ["io.geokafka.spark.GeokafkaException", "org.apache.kafka.common.errors.InterruptException",
                          "java.lang.InterruptedException"]
    assert record(FENCED_TASK).innermost_cause == "org.apache.kafka.common.errors.ProducerFencedException"


def test_what_a_cancelled_job_writes_is_made_by_a_stop_and_a_real_failure_is_not() -> None:
    assert made_by_a_stop(record(INTERRUPTED_TASK))
    assert all(made_by_a_stop(SparkRecord.starting(line)) for line in ABORT_LINES)
    assert not made_by_a_stop(record(FENCED_TASK))  # a suppressed interrupt is not the root cause
    assert made_by_a_stop(record(SPARK_STOPPED_UNDER_THE_QUERY))  # the scheduler failed the job as Spark stopped
    assert made_by_a_stop(record(BROADCAST_DROPPED_UNDER_A_TASK))  # a task that completed as Spark stopped
    died = record(QUERY_THREAD_DIED_AS_SPARK_STOPPED)
    assert died.level == "ERROR" and died.logger.startswith("thread stream execution thread for geokafka-quiet")
    assert died.causes == ["org.apache.spark.rpc.RpcEnvStoppedException"] and made_by_a_stop(died)
    other = record(['Exception in thread "main" java.lang.IllegalStateException: boom', "\tat a.b.C.d(C.java:1)"])
    assert other.level == "ERROR" and not made_by_a_stop(other)  # a thread that died of anything else
    assert made_by_a_stop(record(STATUS_AFTER_THE_POOL_ENDED))  # work handed to a pool Spark's stop shut down
    full = record([STATUS_AFTER_THE_POOL_ENDED[0], STATUS_AFTER_THE_POOL_ENDED[1].replace("[Terminated,", "[Running,"),
                   *STATUS_AFTER_THE_POOL_ENDED[2:]])
    assert not made_by_a_stop(full)  # a pool that refused work while running is a real error
    shut = record(QUERY_THREAD_DIED_ON_A_SHUT_POOL)
    assert shut.causes == ["java.util.concurrent.RejectedExecutionException"] and made_by_a_stop(shut)  # as a cause
    running = record([line.replace("[Terminated,", "[Running,") for line in QUERY_THREAD_DIED_ON_A_SHUT_POOL])
    assert not made_by_a_stop(running)
    assert not made_by_a_stop(record(FAILED_JOB))  # a job that failed on its own
    assert not made_by_a_stop(SparkRecord.starting("03:16:49 ERROR Executor: Exception in task 0.0 in stage 1.0"))
    assert not made_by_a_stop(SparkRecord.starting("WARNING: Using incubator modules: jdk.incubator.vector"))
    warn = record(["03:16:49 WARN TaskSetManager: Lost task 0.0", *INTERRUPTED_TASK[1:]])
    assert not made_by_a_stop(warn)  # only ERROR records are told apart


def test_a_jvm_line_after_a_record_starts_a_record_of_its_own() -> None:
    rec = record(INTERRUPTED_TASK)
    assert not rec.continued_by("WARNING: Using incubator modules: jdk.incubator.vector")
    assert not rec.continued_by(ABORT_LINES[0])
    assert not SparkRecord.starting("WARNING: Using incubator modules").continued_by("\tat x.Y.z(Y.java:1)")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stop_is_active_while_under_way_for_a_grace_period_after_and_for_good_after_a_signal() -> None:
    clock, signalled = Clock(), threading.Event()
    stops = Stops(clock, signalled)
    assert not stops.active()
    with stops.stopping():
        assert stops.active()
        clock.now += 60  # a query that takes long to stop
        assert stops.active()
    clock.now += GRACE_S - 0.1
    assert stops.active()  # its last lines reach the pipe after the stop returned
    clock.now += 0.2
    assert not stops.active()
    signalled.set()
    clock.now += 3600
    assert stops.active()


def forwarded(lines: list[str | None], stops: Stops, caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="geokafka.spark"):
        SparkLogForwarder(stops, signal_wait_s=0.0).forward_lines(lines)
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "geokafka.spark"]


def test_a_stops_records_go_to_debug_and_the_rest_stays_at_info(caplog: pytest.LogCaptureFixture) -> None:
    clock, signalled = Clock(), threading.Event()
    stops = Stops(clock, signalled)
    lines: list[str | None] = ["WARNING: Using incubator modules", *INTERRUPTED_TASK, *ABORT_LINES, None,
                               *FENCED_TASK, None, *QUERY_THREAD_DIED_AS_SPARK_STOPPED]
    with stops.stopping():
        logged = forwarded(lines, stops, caplog)
    assert [m for level, m in logged if level == logging.INFO] == [
        "spark: WARNING: Using incubator modules", *(f"spark: {line}" for line in FENCED_TASK)]
    assert [m for level, m in logged if level == logging.DEBUG] == [
        f"spark: {line}" for line in [*INTERRUPTED_TASK, *ABORT_LINES, *QUERY_THREAD_DIED_AS_SPARK_STOPPED]]
    # the same records outside a stop: all at info level
    clock.now += GRACE_S + 1
    assert {level for level, _ in forwarded(lines, stops, caplog)} == {logging.INFO}


def test_records_that_come_before_the_signal_handler_ran_wait_for_it(caplog: pytest.LogCaptureFixture) -> None:
    """Spark's JVM got the same SIGTERM and wrote first: its records wait (briefly) for this process's handler."""
    signalled = threading.Event()
    stops = Stops(Clock(), signalled)
    threading.Timer(0.2, signalled.set).start()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="geokafka.spark"):
        SparkLogForwarder(stops, signal_wait_s=5.0).forward_lines(INTERRUPTED_TASK)
    assert {r.levelno for r in caplog.records if r.name == "geokafka.spark"} == {logging.DEBUG}


def test_a_line_of_the_jvms_own_is_logged_at_once_a_log_record_once_its_trace_is_whole(
        caplog: pytest.LogCaptureFixture) -> None:
    """Spark's first line says its JVM runs (`mirror` waits for it): it is not held back for a stack trace."""
    logged: list[str] = []

    def lines() -> Iterator[str | None]:
        yield "WARNING: Using incubator modules"
        logged.extend(r.getMessage() for r in caplog.records)
        yield INTERRUPTED_TASK[0]
        yield INTERRUPTED_TASK[1]
        logged.extend(r.getMessage() for r in caplog.records[1:])

    with caplog.at_level(logging.DEBUG, logger="geokafka.spark"):
        SparkLogForwarder(Stops(Clock(), threading.Event()), signal_wait_s=0.0).forward_lines(lines())
    assert logged == ["spark: WARNING: Using incubator modules"]
    assert len(caplog.records) == 3
