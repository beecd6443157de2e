"""``Offer``: a pending task could finish sooner elsewhere. Carried by the queue's events and by
``replies.TaskView``; its own module so that a client decoding a queue listing does not load the task
model (``tasks.records`` re-exports it)."""

import msgspec


class Offer(msgspec.Struct, frozen=True, kw_only=True):
    """A pending task could finish sooner elsewhere: it has waited ``waited_s`` seconds, longer than its
    estimated run of ``run_s`` seconds on the allowed, free device ``device_key`` (``device_name``).

    The contract between whoever makes offers (the estimator) and the tray that shows them:
    - the owner sets ``TaskView.offer`` on a pending task's view while the offer stands
      (``TaskView.of(record, offer)``), and emits one ``QueueEvent(kind="offer", offer=...)`` (message:
      the arithmetic, in words) when it becomes set; the tray shows it as a ``job_offer`` notification;
    - never for a task whose ``TaskSpec.offer_declined`` is true;
    - "Run on <device_name> now" is ``Edit(id, TaskPatch(device_prefs=(device_key,)))``: the task's first
      choice becomes that device, so the next dispatch starts it there;
    - "Keep waiting" is ``Edit(id, TaskPatch(offer_declined=True))``: no more offers for that task.
    """

    device_key: str
    device_name: str
    run_s: float
    waited_s: float
