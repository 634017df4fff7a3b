"""Workflow reasons and audit codes read in the reader's language; old rows keep their text."""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext_noop

from rollout.labels import (
    action_label,
    reason_data,
    reason_text,
    state_label,
    state_label_lazy,
)
from rollout.models import AuditEntry, GateState, Measurement, PlanState
from rollout.services.errors import NotPermitted, WorkflowConflict
from tests.rollout.conftest import at, write
from tests.rollout.test_analysis import started, step


def test_a_failed_gate_reads_in_chinese_and_in_english_exactly_as_stored(
    plan_factory, users, clusters
):
    plan, run = started(plan_factory, users, count=4, failure_limit=0)
    write(clusters["unified"], "acme-chat", at(-5), 3.0)
    run, _metric = step(run, 0)
    measured = Measurement.objects.get(result__run=run)
    rollback = AuditEntry.objects.get(plan=plan, action="rollback")
    with translation.override("en"):
        # English pages show what the API and the stored text say, word for word.
        assert measured.reason_display == measured.reason
        assert run.message_display == run.message == rollback.reason_display
        assert run.message.startswith("failed: ")
    with translation.override("zh-hans"):
        assert "不成立" in measured.reason_display and "个数值" in measured.reason_display
        assert "does not hold" not in measured.reason_display
        assert run.message_display.startswith("失败：")
        assert rollback.action_display == "回滚"
        assert (rollback.from_state_display, rollback.to_state_display) == ("运行中", "已回滚")
        assert rollback.actor_display == "系统"


def test_a_passing_measurement_reads_holds_in_both_languages(plan_factory, users, clusters):
    _plan, run = started(plan_factory, users, count=3, interval_seconds=30)
    write(clusters["unified"], "acme-chat", at(-5), 0.4)
    run, _metric = step(run, 0)
    measured = Measurement.objects.get(result__run=run)
    with translation.override("en"):
        assert measured.reason_display == measured.reason
    with translation.override("zh-hans"):
        assert "成立" in measured.reason_display and "holds" not in measured.reason_display


def test_rows_written_before_the_codes_and_typed_reasons_show_their_stored_text():
    with translation.override("zh-hans"):
        assert reason_text(None, "failed: p99-latency") == "failed: p99-latency"
        assert reason_text({"code": "no-such-code"}, "as stored") == "as stored"
        assert reason_text(reason_data("no_data"), "missing params") == "missing params"


def test_refused_commands_and_unknown_codes_keep_a_readable_label():
    with translation.override("zh-hans"):
        assert action_label("approve_denied") == "批准（被拒绝）"
        assert action_label("brand_new_action") == "brand_new_action"
        # A gate's "passed" is the analysis verdict; a plan has no such state.
        assert state_label("passed", dict(GateState.choices), dict(PlanState.choices)) == "分析通过"
        assert state_label("awaiting_approval", dict(PlanState.choices)) == "待审批"
        assert state_label("no-such-state", dict(PlanState.choices)) == "no-such-state"


def test_a_refused_command_reads_in_the_readers_language_and_is_stored_in_english():
    refusal = NotPermitted(
        gettext_noop("lacks the %(capability)s permission"), capability="approve"
    )
    conflict = WorkflowConflict(
        gettext_noop("the gate is %(state)s: only a running analysis is skipped"),
        state=state_label_lazy("passed", dict(GateState.choices)),
    )
    with translation.override("zh-hans"):
        assert str(refusal) == "缺少 approve 权限"
        assert refusal.english == "lacks the approve permission"
        # The audit row of the refusal keeps the English text and shows the Chinese one.
        assert reason_text(refusal.reason_data, refusal.english) == "缺少 approve 权限"
        assert "分析通过" in str(conflict)
        assert conflict.english.startswith("the gate is analysis passed:")
    with translation.override("en"):
        assert reason_text(refusal.reason_data, "") == refusal.english
