"""Runs a command, forwards its output, then prints its exit status."""
import subprocess
import sys

result = subprocess.run(sys.argv[1:])
sys.stdout.flush()
print("exit code: %d" % result.returncode, flush=True)
