"""The scheduler's client face: everything above the scheduler (the tray in gui/, the cluster in
cluster/) reaches the scheduler through these modules and no other (import contract "doors" in
pyproject.toml, checked by ``tests/test_code_quality.py``). Each re-exports, by name, what a client
may use; the scheduler's wings behind them (queue, jobs, store, the owner's insides, the IPC server)
can change without a client noticing.

- ``connection``: the typed IPC client, its errors, and where the owner's socket and files are;
- ``requests``: the protocol's requests (``rq``); ``replies``: its typed replies (``rp``);
- ``tasks``: the task records a client reads or sends, and the recipes that make tasks from files;
- ``words``: reason codes and their rendering per language;
- ``settings``: the config file and the Python envs, read and written by Settings;
- ``doctor``: the doctor's results and checks;
- ``program``: the program's start (the command line, the streams, the umask);
- ``about``: the version; ``log_setup``: logging as the owner sets it up;
- ``host``: the owner itself, for a tray that runs it in its own process.

Each room imports only what it re-exports, so a client loads no more than it uses (``host`` loads the
whole queue: import it where an owner is started, not at the top of a module).
"""
