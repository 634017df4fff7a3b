"""Run-level aggregation used by ``compare`` (means over steps, pooled request latencies).

Latency quantiles over a run are quantiles of the pooled request sample (each sampled request
weighted by the requests it stands for; :mod:`.serving.requests`); attainment is the
request-weighted mean of the per-step sampled attainment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import summary_training
from .sched.policy import shared_pool
from .serving.requests import pooled_quantile

if TYPE_CHECKING:  # annotations only
    from .state import EngineState
    from .world import World


def _wait_all(w, st) -> float:
    jobs = st.jobs
    sub = w.jobs.submit <= st.t
    if not sub.any():
        return 0.0
    ongoing = (jobs.state == 1) & sub
    wait = jobs.wait_total + ongoing * (st.t - jobs.queued_since)
    return float(wait[sub].mean() / 3600.0)


# Warm-up a run's tail figures leave out (issue 35 item 3): a run starts with no queue, no
# cache and, under split, the replay's replicas placed over its first steps (split's first
# two steps of a replay read P99 31 s and 17 s); a load sweep compares steady states, so the
# ``*_steady`` figures pool only the requests after this time (the whole-run figures stay).
# 20 min: a looped replay's queue and cache have settled (tests/engine/test_replay_tails.py).
WARMUP_S = 1200.0
STEADY_KEYS = ("ttft", "tpot", "e2e")  # run histograms copied at the end of the warm-up


def _steady_figures(acc: dict) -> dict[str, float]:
    """Pooled quantiles of the requests after :data:`WARMUP_S` (empty before it ends)."""
    if "warm_hist_ttft" not in acc:
        return {}
    out: dict[str, float] = {"warmup_s": WARMUP_S}
    for key, q, name in (
        ("ttft", 0.5, "ttft_p50_ms_steady"),
        ("ttft", 0.99, "ttft_p99_ms_steady"),
        ("tpot", 0.99, "tpot_p99_ms_steady"),
        ("e2e", 0.99, "e2e_p99_ms_steady"),
    ):
        h = acc.get(f"req_hist_{key}")
        if h is None:
            continue
        v = pooled_quantile({f"req_hist_{key}": h - acc[f"warm_hist_{key}"]}, key, q)
        if v is not None:
            out[name] = v * 1e3
    return out


class Summary:
    """Accumulator stored in the engine state (plain floats only, so it pickles trivially)."""

    FIELDS = (
        "steps",
        "alloc",
        "busy",
        "samples",
        "mfu",
        "mfu_w",
        "req",
        "p50",
        "p99",
        "ttft",
        "attain",
        "hbm_live",
        "core_req",
        "core_attain",
        "train_flops",
    )

    @staticmethod
    def empty() -> dict[str, float]:
        """Fresh accumulator."""
        return {k: 0.0 for k in Summary.FIELDS}

    @staticmethod
    def update(acc: dict[str, float], snap, lat: dict, train: dict, world: World) -> None:
        """Add one step."""
        c = snap.cluster
        dt = world.scenario.step_seconds
        acc["steps"] += 1
        acc["alloc"] += c["cluster_utilization_allocated_ratio"]
        acc["busy"] += c["cluster_utilization_busy_ratio"]
        acc["samples"] += c["cluster_training_samples_per_second"]
        w = float(train["cards"].sum())
        acc["mfu"] += c["cluster_mfu_ratio"] * w
        acc["mfu_w"] += w
        req = lat["lam"] * dt
        acc["req"] += float(req.sum())
        acc["p50"] += float((lat["p50"] * req).sum())
        acc["p99"] += float((lat["p99"] * req).sum())
        acc["ttft"] += float((lat["ttft_p99"] * req).sum())
        acc["attain"] += float((lat["attainment"] * req).sum())
        core = world.svc.core
        acc["core_req"] += float(req[core].sum())
        acc["core_attain"] += float((lat["attainment"] * req)[core].sum())
        acc["hbm_live"] += c["cluster_hbm_live_ratio"]
        if "warm_hist_ttft" not in acc and snap.t >= WARMUP_S:
            # End of the warm-up: the histograms so far are what the steady figures leave out.
            for key in STEADY_KEYS:
                h = acc.get(f"req_hist_{key}")
                acc[f"warm_hist_{key}"] = h.copy() if h is not None else 0.0
        for k, key in (("ttft50", "ttft_p50"), ("tpot50", "tpot_p50"), ("tpot99", "tpot_p99")):
            acc[k] = acc.get(k, 0.0) + float((lat[key] * req).sum())  # serving (issue 13)
        acc["train_flops"] = (
            acc.get("train_flops", 0.0)
            + float((train["mfu"] * train["busy"] * train["cards"]).sum()) * world.hw.peak_flops
        )
        # Inference duty cycle (issue 25 part 3): busy share of the cards held for inference;
        # a split partition's cards count whether or not a replica sits on them.
        scards = snap.values["workload"]["workload_allocated_cards"][world.jobs.n :]
        busy_cards = float((lat["busy"] * scards).sum())
        held = float(scards.sum())
        if not shared_pool(world.scenario.policy):
            held = max(held, float(world.infer_pool.sum()))
        # Goodput (engine.headline): model FLOPs of the requests that met every SLO target.
        sv = world.svc
        good = lat["attainment"] * req * 2.0 * sv.m.active_params * (sv.prompt + sv.output)
        acc["inf_good_flops"] = acc.get("inf_good_flops", 0.0) + float(good.sum())
        acc["inf_busy_cards"] = acc.get("inf_busy_cards", 0.0) + busy_cards
        acc["inf_held_cards"] = acc.get("inf_held_cards", 0.0) + held
        summary_training.update(acc, train)

    @staticmethod
    def finish(acc: dict[str, float], w: World, st: EngineState) -> dict[str, float]:
        """Final figures (the keys ``compare`` prints and writes to JSON)."""
        n = max(acc["steps"], 1.0)
        r = max(acc["req"], 1e-9)
        c = st.counters
        jw = st.jobs.wait_total
        started = st.jobs.state >= 2
        out = {
            "simulated_hours": st.t / 3600.0,
            "utilization_allocated_mean": acc["alloc"] / n,
            "utilization_busy_mean": acc["busy"] / n,
            "training_samples_per_s_mean": acc["samples"] / n,
            "mfu_mean": acc["mfu"] / max(acc["mfu_w"], 1e-9),
            "training_pflops_mean": acc.get("train_flops", 0.0) / n / 1e15,
            "inference_p50_ms": acc["p50"] / r * 1e3,
            "inference_p99_ms": acc["p99"] / r * 1e3,
            "ttft_p99_ms": acc["ttft"] / r * 1e3,
            "slo_attainment": acc["attain"] / r,
            "core_slo_attainment": acc["core_attain"] / max(acc["core_req"], 1e-9),
            "hbm_live_fraction_mean": acc["hbm_live"] / n,
            "kv_hit_ratio": c["kv_hits"] / c["kv_lookups"] if c["kv_lookups"] else 0.0,
            "kv_evictions": c["kv_evictions"],
            "kv_allocation_failures": c["kv_alloc_failures"],
            "kv_offload_gb": c["kv_offload_bytes"] / 1e9,
            "preemptions": int(c["preemptions"]),
            # Training preempted by a higher-priority training job (Policy.priority_preempt_wait_s).
            "priority_preemptions": int(c.get("priority_preemptions", 0)),
            "resizes": int(c["resizes"]),
            "restarts": int(c["restarts"]),
            "card_failures": int(c["card_failures"]),
            "link_failures": int(c["link_failures"]),
            "lost_samples": c["lost_samples"],
            "completed_jobs": int(c["completed_jobs"]),
            "queue_wait_h_mean": float(jw[started].mean() / 3600.0) if started.any() else 0.0,
            # Over every submitted job, counting the wait so far of those still queued: the
            # started-only mean above leaves out the jobs a full partition never started.
            "queue_wait_h_mean_all": _wait_all(w, st),
            "energy_mwh": c["energy_joules"] / 3.6e9,
            # Serving (issue 13): TTFT / TPOT headline figures; e2e = inference_p99_ms.
            "ttft_p50_ms": acc.get("ttft50", 0.0) / r * 1e3,
            "tpot_p50_ms": acc.get("tpot50", 0.0) / r * 1e3,
            "tpot_p99_ms": acc.get("tpot99", 0.0) / r * 1e3,
            "e2e_p99_ms": acc["p99"] / r * 1e3,
            "inference_requests": int(round(c.get("inference_requests", 0.0))),
            "inference_timeouts": int(round(c.get("inference_timeouts", 0.0))),
        }
        # Request-level sample (issue 25): run quantiles of the pooled sampled requests.
        for key, q, name in (
            ("ttft", 0.5, "ttft_p50_ms"),
            ("ttft", 0.99, "ttft_p99_ms"),
            ("tpot", 0.5, "tpot_p50_ms"),
            ("tpot", 0.99, "tpot_p99_ms"),
            ("e2e", 0.5, "inference_p50_ms"),
            ("e2e", 0.99, "inference_p99_ms"),
            ("e2e", 0.99, "e2e_p99_ms"),
        ):
            v = pooled_quantile(acc, key, q)
            if v is not None:
                out[name] = v * 1e3
        out["latency_sample_requests"] = int(acc.get("req_sampled", 0.0))
        out.update(_steady_figures(acc))
        held = acc.get("inf_held_cards", 0.0)
        out["inference_duty_cycle"] = acc.get("inf_busy_cards", 0.0) / held if held else 0.0
        out["inference_cards_mean"] = held / n
        rp = w.scenario.replay or {}
        out["prompts_truncated"] = int(
            round(c.get("prompts_truncated", 0.0) + rp.get("prompts_truncated", 0))
        )
        out.update(summary_training.finish(acc, w, st, out))
        # The headline's goodput (engine.headline): useful PFLOP per card-hour of the cluster.
        card_h = max(float(w.idx.n_cards) * st.t / 3600.0, 1e-9)
        train_good = max(acc.get("train_flops", 0.0) * w.scenario.step_seconds
                         - c.get("lost_flops", 0.0), 0.0)  # fmt: skip
        inf_good = acc.get("inf_good_flops", 0.0)
        out["goodput_training_pflop_per_card_hour"] = train_good / 1e15 / card_h
        out["goodput_inference_pflop_per_card_hour"] = inf_good / 1e15 / card_h
        out["goodput_pflop_per_card_hour"] = (train_good + inf_good) / 1e15 / card_h
        return out
