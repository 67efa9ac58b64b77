"""A minimal SSH server for the lab's machines (machines_lab): asyncssh's server, run inside a
machine's namespace, that accepts one client key and runs each command it is given with the shell,
its input and output carried over the connection. It lets the tests start Dask workers the way a
real machine's sshd does, where no sshd is installed.

    python -m tests.emulation.ssh_server ADDRESS PORT HOST_KEY AUTHORIZED_KEY
"""
import asyncio
import subprocess
import sys

import asyncssh


async def _run(process):
    proc = subprocess.Popen(process.command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr)
    process.exit(await asyncio.get_running_loop().run_in_executor(None, proc.wait))


async def main(address, port, host_key, authorized_key):
    await asyncssh.create_server(asyncssh.SSHServer, address, int(port), server_host_keys=[host_key],
                                 authorized_client_keys=authorized_key, process_factory=_run)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
