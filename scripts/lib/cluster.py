"""A Lector cluster on one machine, for scripts/cluster: API nodes (`lector serve --workers 0`)
and worker nodes (`lector worker`) on one fresh PostgreSQL database and one S3-compatible
store (moto's server, from PyPI), behind a round-robin TCP proxy written here that can cut a
node off. The nodes reach PostgreSQL and S3 through cuttable proxies too, so an outage is a cut
connection, never a stopped server of the machine.

Standard library only, apart from moto and boto3 in the venv that scripts/cluster makes."""

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error

from lector_server import ROOT, Client, free_port

ADMIN_DATABASE_URL = os.environ.get("LECTOR_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")


class Proxy:
    """A TCP proxy on a free loopback port that hands each new connection to the next backend
    in turn that is neither cut nor refusing. `cut(i)` closes backend i's open connections and
    sends it no new ones until `restore(i)`; a proxy with every backend cut accepts and closes."""

    def __init__(self, backends):
        self.backends = list(backends)
        self.port = free_port()
        self._cut = set()
        self._open = {i: set() for i in range(len(self.backends))}
        self._turn = 0
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", self.port))
        ready.set()
        self._loop.run_forever()

    async def _accept(self, client_reader, client_writer):
        for _ in range(len(self.backends)):
            index = self._turn % len(self.backends)
            self._turn += 1
            if index in self._cut:
                continue
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.backends[index]), 2)
            except (OSError, asyncio.TimeoutError):
                continue
            pair = (client_writer, writer)
            self._open[index].add(pair)
            try:
                await asyncio.gather(_pipe(client_reader, writer), _pipe(reader, client_writer))
            finally:
                self._open[index].discard(pair)
                for w in pair:
                    w.close()
            return
        client_writer.close()

    def _on_loop(self, action):
        done = threading.Event()

        def run():
            action()
            done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait()

    def cut(self, index):
        def action():
            self._cut.add(index)
            for pair in list(self._open[index]):
                for w in pair:
                    w.transport.abort()
        self._on_loop(action)

    def restore(self, index):
        self._on_loop(lambda: self._cut.discard(index))

    def cut_all(self):
        for i in range(len(self.backends)):
            self.cut(i)

    def restore_all(self):
        for i in range(len(self.backends)):
            self.restore(i)


async def _pipe(reader, writer):
    """Copies until end of stream, then half-closes the other side."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.transport.abort()


def psql(database_url, sql):
    """Rows of `sql` run with psql, as lists of strings (tab-separated output)."""
    done = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", database_url,
                           "-c", sql], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"psql: {done.stderr.strip()} ({sql})")
    return [line.split("\t") for line in done.stdout.splitlines() if line]


class Node:
    """One `lector serve --workers 0` (role "serve") or `lector worker` (role "worker")
    process with a data directory of its own and one log file across its restarts."""

    def __init__(self, cluster, role, number):
        self.cluster, self.role, self.number = cluster, role, number
        self.name = f"{role}-{number}"
        self.dir = os.path.join(cluster.dir, self.name)
        os.makedirs(self.dir)
        self.port = free_port() if role == "serve" else None
        self.log_path = os.path.join(cluster.dir, f"{self.name}.log")
        self.process = None

    def start(self, wait=True):
        env = dict(self.cluster.env, LECTOR_DATA_DIR=self.dir)
        if self.role == "serve":
            env.update(LECTOR_LISTEN=f"127.0.0.1:{self.port}", LECTOR_WORKERS="0")
        else:
            env.update(LECTOR_WORKERS=str(self.cluster.worker_threads))
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen([self.cluster.binary, self.role], stdout=log, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)
        if wait:
            self.wait_ready()

    def wait_ready(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.name} exited with {self.process.returncode}; see {self.log_path}")
            if self.role == "serve":
                try:
                    if self.client().request("GET", "/health", timeout=2)[0] == 200:
                        return
                except OSError:
                    pass
            elif "lector worker is running" in open(self.log_path, errors="replace").read():
                return
            time.sleep(0.1)
        raise SystemExit(f"{self.name} did not become ready in {seconds} s; see {self.log_path}")

    def client(self):
        return Client(f"https://127.0.0.1:{self.port}")

    def running(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, number):
        os.kill(self.process.pid, number)

    def kill(self):
        """SIGKILL: no drain, no released lease."""
        self.signal(signal.SIGKILL)
        self.process.wait()

    def terminate(self, seconds=90):
        """SIGTERM; answers the exit code."""
        self.signal(signal.SIGTERM)
        return self.process.wait(timeout=seconds)

    def log_events(self):
        """The JSON log lines of every run of this node, as dicts."""
        events = []
        for line in open(self.log_path, errors="replace"):
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return events


class Cluster:
    """A fresh database, an S3 server, `serve` API nodes and `workers` worker nodes, and the
    proxies. `stop()` ends every process and drops the database."""

    def __init__(self, binary, venv, serve=3, workers=2, worker_threads=2, lease_secs=6):
        self.binary, self.worker_threads = binary, worker_threads
        self.dir = tempfile.mkdtemp(prefix="lector-cluster-")
        self.database = f"lector_cluster_{secrets.token_hex(6)}"
        self.s3_process = None
        self.nodes = []
        admin = ADMIN_DATABASE_URL
        psql(admin, f"CREATE DATABASE {self.database}")
        self.database_url = admin.rsplit("/", 1)[0] + "/" + self.database
        host, port = _host_port(admin)
        self.pg_proxy = Proxy([(host, port)])
        self._start_s3(venv)
        bucket = "lector-cluster"
        subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                        "import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1',"
                        " aws_access_key_id='cluster', aws_secret_access_key='cluster-secret')"
                        ".create_bucket(Bucket=sys.argv[2])", f"http://127.0.0.1:{self.s3_port}", bucket], check=True)
        self.s3_proxy = Proxy([("127.0.0.1", self.s3_port)])
        self.env = dict(
            os.environ,
            RUST_LOG="info,sqlx=warn",
            LECTOR_LOG_FORMAT="json",
            LECTOR_DATABASE_URL=self.database_url.replace(f":{port}/", f":{self.pg_proxy.port}/"),
            LECTOR_JWT_SECRET=secrets.token_hex(32),
            LECTOR_CREDENTIAL_KEY=secrets.token_hex(32),
            LECTOR_BLOB_URL=f"s3://{bucket}/blobs",
            LECTOR_JOB_LEASE_SECS=str(lease_secs),
            AWS_ACCESS_KEY_ID="cluster",
            AWS_SECRET_ACCESS_KEY="cluster-secret",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=f"http://127.0.0.1:{self.s3_proxy.port}",
        )
        subprocess.run([binary, "migrate"], env=dict(self.env, LECTOR_DATA_DIR=self.dir), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.api = [Node(self, "serve", n) for n in range(serve)]
        self.workers = [Node(self, "worker", n) for n in range(workers)]
        self.nodes = self.api + self.workers
        for node in self.nodes:
            node.start(wait=False)
        for node in self.nodes:
            node.wait_ready()
        self.proxy = Proxy([("127.0.0.1", node.port) for node in self.api])
        self.client = Client(f"https://127.0.0.1:{self.proxy.port}")

    def _start_s3(self, venv):
        self.s3_port = free_port()
        self.s3_log = open(os.path.join(self.dir, "s3.log"), "w")
        self.s3_process = subprocess.Popen([os.path.join(venv, "bin", "moto_server"), "-H", "127.0.0.1",
                                            "-p", str(self.s3_port)], stdout=self.s3_log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                if Client(f"http://127.0.0.1:{self.s3_port}").request("GET", "/", timeout=1)[0] < 500:
                    return
            except (OSError, urllib.error.URLError):
                time.sleep(0.1)
        raise SystemExit("moto's server did not start; see " + self.s3_log.name)

    def sql(self, query):
        return psql(self.database_url, query)

    def owner_node(self, lease_owner):
        """The node whose current process holds a lease (owners are host/pid/start/n); None
        for an earlier, killed process of a node."""
        pid = int(lease_owner.split("/")[1])
        return next((n for n in self.nodes if n.process and n.process.pid == pid), None)

    def events(self):
        """Every node's JSON log lines, each with the node's name under `node`."""
        return [dict(e, node=n.name) for n in self.nodes for e in n.log_events()]

    def stop(self, keep=False):
        for node in self.nodes:
            if node.running():
                node.signal(signal.SIGCONT)
                node.kill()
        if self.s3_process:
            self.s3_process.kill()
            self.s3_process.wait()
        psql(ADMIN_DATABASE_URL, f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
        if keep:
            print(f"logs kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def _host_port(url):
    rest = url.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = rest.partition(":")
    return host, int(port or 5432)


def build_venv(path):
    """moto's S3 server and boto3 in a venv of their own (PyPI), made once."""
    python = os.path.join(path, "bin", "python")
    if not os.path.exists(os.path.join(path, "bin", "moto_server")):
        subprocess.run(["python3", "-m", "venv", path], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "moto[server]==5.*"], check=True)
    return path


DEFAULT_VENV = os.path.join(ROOT, ".cache", "cluster-venv")
