"""``validate`` checks of the default workload (issue 25 parts 3-4): inference fleet and contexts.

* **Inference fleet** (:mod:`.scenario.inference_demand`): the default 10,240-card scenario's
  duty cycle under static provisioning next to the published duty-cycle traces (fitted), and
  with replicas following demand; then an engine run checks that the engine measures the
  same duty cycle the analytic statistic predicts.
* **Context windows**: the share of each default service's requests that would overflow its
  model's context window (``scenario.defaults.fit_lengths`` keeps it under 0.5%).
"""

from __future__ import annotations

from .catalog import get_hardware, get_model
from .scenario.defaults import DEFAULT_TRAINING_LOAD


def inference_fleet_check(out=print, seeds: tuple[int, ...] = (7, 8, 9)) -> dict:
    """Fitted duty cycle vs sources; follow-demand duty; engine vs analytic on a small run."""
    from .engine import Engine
    from .scenario import default_scenario
    from .scenario import inference_demand as fleet
    from .spread import stats

    rows: dict = {}
    duty, follow = [], []
    for seed in seeds:
        scen = default_scenario(10240, seed)
        hw = get_hardware(scen.topology.hardware)
        duty.append(fleet.fleet_statistics(scen.services, hw, scen.policy))
        follow.append(
            fleet.fleet_statistics(scen.services, hw, scen.policy, static=False)["duty_cycle_mean"]
        )
    out(
        f"Inference fleet: default 10,240 cards, seeds {seeds[0]}..{seeds[-1]} "
        f"(use median {fleet.PARAMS.use_median:g}, sigma {fleet.USE_SIGMA:g}, on/off share "
        f"{fleet.ON_OFF_SHARE:g}: assumptions except the fitted median)"
    )
    for key, (target, source) in fleet.TARGETS.items():
        st = stats([d[key] for d in duty])
        out(
            f"  {key:<22}{st['mean']:>8.3f} [{st['min']:.3f}, {st['max']:.3f}]  source "
            f"{target:>6.3f}  fitted   ({source})"
        )
        rows[key] = {"twin": st["mean"], "min": st["min"], "max": st["max"], "source": target}
    for key, (target, source) in fleet.CONTEXT.items():
        # The trace's idle share counts 30-s samples at 0%, so the twin's is its share of
        # quiet 30-s windows (``idle_sample_share``), not 1 - duty.
        twin = (
            duty[0]["idle_sample_share"] if key == "idle_time_share" else duty[0]["duty_cycle_mean"]
        )
        role = "held out" if key == "pai_gpu_util_mean" else "same trace, not fitted"
        out(f"  {key:<22}{twin:>8.3f}  source {target:>6.3f}  {role}  ({source})")
        rows[key] = {"twin": twin, "source": target, "role": role}
    refit = fleet.fit()  # ~2 s (secant), so validate reruns it rather than quoting it
    drift = abs(refit.use_median / fleet.PARAMS.use_median - 1.0)
    state = "matches" if drift < 0.01 else "STALE: paste the refit into scenario/inference_demand"
    out(
        f"  use median refit now (seed 7, 10,240 cards): {refit.use_median:g}; "
        f"in code {fleet.PARAMS.use_median:g} ({state})"
    )
    rows["use_median_refit"] = refit.use_median
    pt = stats([d["request_peak_trough"] for d in duty])
    fs = stats(follow)
    out(
        f"  fleet request peak/trough {pt['mean']:.1f} [{pt['min']:.1f}, {pt['max']:.1f}]; "
        f"duty with replicas following demand {fs['mean']:.3f} [{fs['min']:.3f}, {fs['max']:.3f}]"
    )
    rows["follow_demand_duty"] = fs["mean"]
    # The engine measures what the analytic statistic predicts (same scenario, split, 24 h).
    scen = default_scenario(2048, seeds[0], policy="split", hours=24.0)
    hw = get_hardware(scen.topology.hardware)
    pred = fleet.fleet_statistics(scen.services, hw, scen.policy)["duty_cycle_mean"]
    eng = Engine(scen)
    eng.run_until(24 * 3600.0)
    summ = eng.summary()
    got = summ["inference_duty_cycle"]
    # The same run's training queue is the training demand's held-out check (validate).
    rows["engine_summary"] = {
        "queue_wait_h_mean": summ["queue_wait_h_mean"],
        "cards": 2048,
        "hours": 24.0,
        "training_load": DEFAULT_TRAINING_LOAD,
    }
    out(
        f"  engine check (2,048 cards, split, 24 h): engine duty {got:.4f} vs analytic "
        f"{pred:.4f} ({got / pred - 1:+.1%})"
    )
    rows["engine_vs_analytic"] = {"engine": got, "analytic": pred}
    return rows


def context_check(out=print, seeds: tuple[int, ...] = (7, 8)) -> dict:
    """Worst share of default requests overflowing their model's context window."""
    from .scenario import default_scenario
    from .scenario.defaults import CONTEXT_OVERFLOW, overflow_share

    worst = {}
    for seed in seeds:
        for s in default_scenario(10240, seed).services:
            m = get_model(s.model)
            share = overflow_share(s.prompt_tokens_mean, s.output_tokens_mean, m.max_context)
            worst[m.id] = max(worst.get(m.id, 0.0), share)
    out(
        "Context windows: worst share of default requests past the model's window (budget "
        f"{CONTEXT_OVERFLOW:.1%}; windows from the models' published configs)"
    )
    for mid, share in sorted(worst.items()):
        out(f"  {mid:<14} context {get_model(mid).max_context:>6,}  overflow {share:.2%}")
    return {"worst": max(worst.values()), "budget": CONTEXT_OVERFLOW}
