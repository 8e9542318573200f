"""The worker's side of the reference-process protocol, in Python: for tests and the GPU check script.

Starts `python3 -m kforge_torch.reference` exactly as the GPU worker does: requests on the child's fd
3, replies on its fd 4, stdout to /dev/null, stderr shared. `ask()` sends one request and returns
the reply, or raises when the process died (with its exit status).
"""
import os
import subprocess
import sys

from .frames import read_frame, write_frame

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReferenceDied(Exception):
    pass


class ReferenceClient:
    def __init__(self, python=None, env=None):
        requests_read, self.requests = os.pipe()
        self.replies, replies_write = os.pipe()

        def place_fds():  # in the child: the pipe ends at 3 and 4, wherever os.pipe() put them
            high_r, high_w = os.dup(requests_read), os.dup(replies_write)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        environment = dict(env if env is not None else os.environ)
        environment["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + environment["PYTHONPATH"]
                                                    if environment.get("PYTHONPATH") else "")
        self.process = subprocess.Popen([python or sys.executable, "-m", "kforge_torch.reference"],
                                        preexec_fn=place_fds, close_fds=False, env=environment,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(requests_read)
        os.close(replies_write)

    def ask(self, request):
        try:
            write_frame(self.requests, request)
            reply = read_frame(self.replies)
        except OSError:
            reply = None
        if reply is None:
            raise ReferenceDied(f"the reference process ended (status {self.process.wait()})")
        return reply

    def close(self):
        """Closes the request pipe (the process exits on its own) and returns its exit status."""
        if self.requests is not None:
            os.close(self.requests)
            self.requests = None
        status = self.process.wait(timeout=60)
        os.close(self.replies)
        return status

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.requests is not None:
            try:
                self.close()
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
