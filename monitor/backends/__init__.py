"""The monitor's backends, one file per backend family, each the same shape: a class whose
``poll(now_s)`` discovers and samples its devices and never raises (``base.Backend``). See
docs/architecture.md, "The monitor's rooms"."""
