"""What the hostile WHIP publishers share: reading their own flags out of whip_aiortc.py's
argument list, and running whip_aiortc.py with its JSON line extended by their counters."""
import contextlib
import io
import json

import whip_aiortc


def take(argv, flag, default):
    """Removes `flag VALUE` from argv and returns VALUE (or `default`)."""
    if flag in argv:
        index = argv.index(flag)
        value = argv[index + 1]
        del argv[index:index + 2]
        return value
    return default


def run(argv, extra):
    """Runs whip_aiortc.main(argv); its JSON line gets the fields `extra()` returns then."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = whip_aiortc.main(argv)
    result = {}
    for line in captured.getvalue().splitlines():
        if line.startswith("{"):
            result = json.loads(line)
        else:
            print(line)
    result.update(extra())
    print(json.dumps(result), flush=True)
    return code
