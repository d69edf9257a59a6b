"""What every end-to-end script shares: a checked step that prints `ok - ...` or stops the script
with `FAIL: ...`, and polling until a condition holds."""
import time


def check(cond, what):
    """Prints `ok - what`, or raises SystemExit("FAIL: what") when `cond` is false."""
    if not cond:
        raise SystemExit("FAIL: " + what)
    print("ok -", what, flush=True)


def eventually(pred, seconds=60, interval=0.1):
    """Calls pred() until it returns something true (returned) or `seconds` pass (then pred()'s
    last answer)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    return pred()
