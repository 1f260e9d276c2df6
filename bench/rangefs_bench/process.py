"""Running commands and waiting on processes: every command under a timeout in its own process
group, the error a measurement that could not be made raises, and the log."""
import contextlib
import os
import signal
import statistics
import subprocess
import time


class BenchError(Exception):
    """A measurement that could not be made; the table shows n/a with this reason."""


class Interrupted(BaseException):
    pass


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd, timeout, check=True, shell=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None):
    """Runs a command in its own process group; kills the whole group on timeout."""
    proc = subprocess.Popen(cmd, shell=shell, stdout=stdout, stderr=stderr,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise BenchError(f"timed out after {timeout:g} s: {short(cmd)}")
    except BaseException:
        kill_group(proc)
        raise
    out = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
    err = err.decode(errors="replace") if isinstance(err, bytes) else (err or "")
    if check and proc.returncode != 0:
        raise BenchError(f"{short(cmd)} exited {proc.returncode}: {err.strip()[-300:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop_server(proc):
    """SIGTERM (nginx's fast shutdown, the proxies' and moto's stop), SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def short(cmd):
    text = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
    return text if len(text) < 160 else text[:157] + "..."


def timed(cmd, timeout, **kw):
    start = time.perf_counter()
    result = run(cmd, timeout, **kw)
    return time.perf_counter() - start, result


# The samples each median() call was given, recorded for the cell being measured
# (recording_samples), innermost last.
_recorders = []


def median(values):
    values = list(values)
    if _recorders:
        _recorders[-1].append(values)
    return statistics.median(values)


@contextlib.contextmanager
def recording_samples():
    """Collects the samples of every median() taken inside, a list per call."""
    calls = []
    _recorders.append(calls)
    try:
        yield calls
    finally:
        _recorders.pop()


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def wait_exit(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)
