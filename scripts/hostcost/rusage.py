#!/usr/bin/env python3
"""rusage.py CMD ARGS...: run CMD, then print one line of what it cost the host:
wall seconds, user and system CPU seconds, voluntary and involuntary context
switches, and its threads' peak (sampled from /proc every 50 ms)."""
import os
import sys
import time

pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
t0 = time.monotonic()
threads = 0
while True:
    done, status, ru = os.wait4(pid, os.WNOHANG)
    if done:
        break
    try:
        threads = max(threads, len(os.listdir(f"/proc/{pid}/task")))
    except OSError:
        pass
    time.sleep(0.05)
wall = time.monotonic() - t0
print(f"### rusage wall_s={wall:.3f} user_s={ru.ru_utime:.3f} sys_s={ru.ru_stime:.3f} "
      f"nvcsw={ru.ru_nvcsw} nivcsw={ru.ru_nivcsw} threads={threads} rc={os.waitstatus_to_exitcode(status)}")
