"""Public measurements the serving latency model is calibrated and validated on (data only)."""
