"""Gate analysis: Argo Rollouts semantics (pure) and the telemetry each measurement reads."""
