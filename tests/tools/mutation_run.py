#!/usr/bin/env python3
"""A mutation run: hostile variants of real GGUF files through every organ command, or (with
--http) through every endpoint of `organ serve`.

Takes the GGUF files of a folder (../shared/models by default), makes mutated copies of them
(bit flips, truncation, huge counts and lengths, invalid UTF-8 and control characters in
strings, FIFOs and links in place of files) and runs every subcommand on each: inspect (plain,
--tensors --metadata, --json), measure (with the cache, and --json/--csv/--markdown), validate,
graft and assemble (the mutant as base, as donor), plan check, vitals (alone, with the mutant as
parent, and on the plan), extract and assemble --organs (also after damaging the manifest), and
purify (both methods). It reports how many runs
crashed (a signal), hung (past the timeout), wrote raw control bytes to the terminal, or used
more than the memory limit, with the peak memory of any run, and keeps the files of each
failure in the work folder.

With --http it starts `organ serve` with the work folder as its root and drives the API instead:
each mutated file through inspect, validate, measure, extract, purify, assemble (the mutant as
base, as donor, by inline plan and by plan file), plan check and fleet; then mutated requests
(paths with "..", absolute, NUL, control characters, invalid UTF-8, links in and out, FIFOs,
devices; JSON bodies with each field removed, retyped, huge, deeply nested, invalid UTF-8; raw
HTTP that is malformed, ambiguous or pipelined). It reports the requests sent, how often the
server crashed (it is restarted), hung (no answer within the timeout, or a job that does not
end when it is cancelled after the timeout) or answered 5xx, and the server's peak memory; and
checks that nothing outside the root changed.

With --organs it extracts each file into an organ directory and attacks the directory instead:
tensor files with changed bytes, cut short or grown, a tensor file, a sub-folder or the manifest
replaced by a link to something outside, by a FIFO or removed, and manifests with bytes, fields
and types changed. Every command that reads a directory runs on each variant (inspect, validate,
measure, fleet, vitals, graft with the directory as base and as donor, plan check and assemble
--plan, assemble --organs, extract, purify), also with its outputs pointed into the directory.
Besides crashes, hangs, raw bytes and memory it reports every run that changed the directory
or anything outside it, and every run that wrote a model or a directory from tampered tensor
bytes and said it succeeded (laundering them).

usage: mutation_run.py ORGAN [--http|--organs] [--models DIR] [--count N] [--seed S] [--work DIR] [--timeout SECONDS]
Not part of the test suite (it takes minutes); the suite has a regression test for each kind
of failure this run ever found.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse


def mutations(data, rng):
    """Yields (kind, bytes) variants of one GGUF file."""
    header = min(len(data), 64 * 1024)
    for _ in range(3):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(header)
            b[i] ^= 1 << rng.randrange(8)
        yield "bitflip", bytes(b)
    yield "truncate", data[: rng.randrange(1, len(data))]
    # A u64 or u32 somewhere in the header set to a huge value (counts, lengths, dims, offsets).
    for value in (0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 1 << 40):
        b = bytearray(data)
        i = rng.randrange(8, header - 8)
        b[i : i + 8] = struct.pack("<Q", value)
        yield "huge", bytes(b)
    b = bytearray(data)
    i = rng.randrange(8, header - 4)
    b[i : i + 4] = struct.pack("<I", 0xFFFFFFFF)
    yield "huge32", bytes(b)
    # Invalid UTF-8 and control characters into printable runs (names, keys, values, tokens).
    for kind, payload in (("utf8", b"\xff\xfe"), ("control", b"\x1b]0;x\x07"), ("newline", b"\n\r")):
        b = bytearray(data)
        runs = [i for i in range(16, header - 8) if 0x61 <= b[i] <= 0x7A and 0x61 <= b[i + 1] <= 0x7A]
        for i in rng.sample(runs, min(4, len(runs))):
            b[i : i + len(payload)] = payload
        yield kind, bytes(b)


def run(command, timeout):
    """Runs one command; returns (status, peak KiB, stdout+stderr). Status: exit code,
    'signal N' or 'hang'."""
    # Output to a file, never a pipe: a pipe that nobody reads would block a large output.
    with tempfile.TemporaryFile() as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid != 0:
                sink.seek(0)
                out = sink.read()
                if os.WIFSIGNALED(status):
                    return f"signal {os.WTERMSIG(status)}", usage.ru_maxrss, out
                return os.WEXITSTATUS(status), usage.ru_maxrss, out
            if time.monotonic() > deadline:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                return "hang", usage.ru_maxrss, b""
            time.sleep(0.002)


def raw_controls(text):
    return any((c < 0x20 and c not in (0x0A,)) or c == 0x7F for c in text) or not valid_utf8(text)


def valid_utf8(text):
    try:
        text.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def source_files(args):
    """The files to mutate, and the donor the grafts use (stories260K-f32.gguf, also when --count
    leaves it out)."""
    sources = sorted(
        os.path.join(root, f) for root, _, files in os.walk(args.models) for f in files if f.endswith(".gguf")
    )
    donor = next(s for s in sources if s.endswith("stories260K-f32.gguf"))
    return [s for s in sources if os.path.getsize(s) < 8 << 20][: args.count], donor


def commands_main(args):
    rng = random.Random(args.seed)
    sources, donor = source_files(args)
    files, runs, crashes, hangs, raw, heavy, peak = 0, 0, [], [], [], [], 0
    for k, source in enumerate(sources):
        data = open(source, "rb").read()
        for m, (kind, mutant) in enumerate(mutations(data, rng)):
            path = os.path.join(args.work, f"m{k:03d}-{m:02d}-{kind}.gguf")
            open(path, "wb").write(mutant)
            files += 1
            plan = path + ".plan.json"
            open(plan, "w").write(
                '{"format":"organ-graft-plan","version":1,"base":"%s","donors":{"d":"%s"},'
                '"operations":[{"op":"replace","donor":"d","system":"organ"},{"op":"duplicate_layer","layer":0}]}'
                % (os.path.basename(path), donor)
            )
            out = path + ".out"
            commands = [
                ["inspect", path],
                ["inspect", path, "--tensors", "--metadata"],
                ["inspect", path, "--json"],
                ["measure", path],
                ["measure", path, "--json", out + ".json", "--csv", out + ".csv", "--markdown", out + ".md"],
                ["validate", path],
                ["graft", "--base", path, "--donor", donor, "--system", "organ", "-o", out + ".a.gguf"],
                ["graft", "--base", donor, "--donor", path, "--layers", "0-1", "-o", out + ".b.gguf"],
                ["plan", "check", plan],
                ["assemble", "--plan", plan, "-o", out + ".c.gguf"],
                ["vitals", path, "--tokens", "4"],
                ["vitals", donor, "--parent", path, "--tokens", "4", "--json", out + ".vitals.json"],
                ["vitals", "--plan", plan, "--tokens", "4"],
                ["extract", path, "-o", out + ".organs"],
                ["assemble", "--organs", out + ".organs", "-o", out + ".d.gguf"],
                ["purify", path, "--method", "fft", "--system", "organ", "-o", out + ".e.gguf"],
                ["purify", path, "--method", "haar", "--layers", "0-1", "-o", out + ".f.gguf"],
                "damage-manifest",
                ["assemble", "--organs", out + ".organs", "-o", out + ".g.gguf"],
            ]
            for command in commands:
                if command == "damage-manifest":
                    manifest = os.path.join(out + ".organs", "manifest.json")
                    if os.path.exists(manifest):
                        damaged = bytearray(open(manifest, "rb").read())
                        for _ in range(rng.randint(1, 4)):
                            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
                        open(manifest, "wb").write(bytes(damaged))
                    continue
                status, kib, text = run([args.organ] + command, args.timeout)
                runs += 1
                peak = max(peak, kib)
                what = f"{os.path.basename(path)}: organ {' '.join(command[:2])} -> {status}"
                if status == "hang":
                    hangs.append(what)
                elif isinstance(status, str) or status not in (0, 1):
                    crashes.append(what)
                if raw_controls(text):
                    raw.append(what)
                if kib > args.memory_limit_mib * 1024:
                    heavy.append(f"{what} ({kib // 1024} MiB)")
    # Special files in place of inputs and outputs.
    fifo = os.path.join(args.work, "fifo.gguf")
    os.mkfifo(fifo)
    link = os.path.join(args.work, "link-to-donor.gguf")
    os.symlink(donor, link)
    special = [
        ["inspect", fifo],
        ["validate", "/dev/zero"],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", "/dev/null"],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", link],
        ["graft", "--base", donor, "--donor", donor, "--layers", "0", "-o", os.path.join(args.work, "x.gguf"),
         "--save-plan", donor],
        ["measure", donor, "--json", fifo],
        ["vitals", donor, "--text", fifo],
        ["vitals", donor, "--text", "/dev/zero"],
        ["vitals", donor, "--json", link],
        ["extract", fifo, "-o", os.path.join(args.work, "fifo-organs")],
        ["extract", donor, "-o", link],
        ["assemble", "--organs", "/dev/zero", "-o", os.path.join(args.work, "y.gguf")],
        ["assemble", "--organs", fifo, "-o", os.path.join(args.work, "y.gguf")],
        ["purify", donor, "--method", "fft", "-o", link],
        ["purify", fifo, "--method", "haar", "-o", os.path.join(args.work, "z.gguf")],
    ]
    for command in special:
        status, kib, text = run([args.organ] + command, args.timeout)
        runs += 1
        peak = max(peak, kib)
        what = f"organ {' '.join(command)} -> {status}"
        if status == "hang":
            hangs.append(what)
        elif status != 1:
            crashes.append(what)
    ok = not (crashes or hangs or raw or heavy)
    print(f"mutated files: {files} (from {len(sources)} sources), runs: {runs}")
    print(f"crashes: {len(crashes)}, hangs: {len(hangs)}, raw control bytes: {len(raw)}, "
          f"over {args.memory_limit_mib} MiB: {len(heavy)}; peak memory of a run: {peak / 1024:.1f} MiB")
    for line in crashes + hangs + raw + heavy:
        print("  " + line)
    return 0 if ok else 1


def organ_variants(folder, rng):
    """Yields (kind, tampered, apply) for one organ directory: `apply(copy)` damages a copy of it;
    `tampered` says that the damage is to tensor bytes only, so a command that copies or computes
    from them must refuse."""
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    tensors = [t["file"] for t in manifest["tensors"]]
    subfolders = sorted({os.path.dirname(f) for f in tensors if os.path.dirname(f)})
    outside = os.path.join(os.path.dirname(folder), "outside")

    def tensor_path(copy):
        return os.path.join(copy, rng.choice(tensors))

    def flip(copy):
        # A tensor no graft of the organ system replaces: every command that copies it must see
        # the change.
        kept = [f for f in tensors if not f.startswith("organs/")] or tensors
        path = os.path.join(copy, rng.choice(kept))
        data = bytearray(open(path, "rb").read())
        if data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        open(path, "wb").write(bytes(data))

    def cut(copy):
        path = tensor_path(copy)
        size = os.path.getsize(path)
        os.truncate(path, rng.randrange(size) if size else 0)

    def grow(copy):
        with open(tensor_path(copy), "ab") as f:
            f.write(b"\0" * rng.choice((1, 32, 4096)))

    def link_file(copy):
        path = tensor_path(copy)
        target = os.path.join(outside, "file-" + os.path.basename(path))
        shutil.copy(path, target)
        os.remove(path)
        os.symlink(target, path)

    def link_folder(copy):
        if not subfolders:
            return
        sub = rng.choice(subfolders)
        target = os.path.join(outside, f"folder-{rng.randrange(1 << 30)}")
        shutil.move(os.path.join(copy, sub), target)
        os.symlink(target, os.path.join(copy, sub))

    def link_manifest(copy):
        path = os.path.join(copy, "manifest.json")
        target = os.path.join(outside, f"manifest-{rng.randrange(1 << 30)}.json")
        shutil.move(path, target)
        os.symlink(target, path)

    def fifo(copy):
        path = tensor_path(copy)
        os.remove(path)
        os.mkfifo(path)

    def remove(copy):
        os.remove(tensor_path(copy))

    def manifest_bytes(copy):
        path = os.path.join(copy, "manifest.json")
        data = bytearray(open(path, "rb").read())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        open(path, "wb").write(bytes(data))

    def manifest_field(copy):
        """One field of the manifest (top level, a tensor's or a metadata entry's) removed,
        retyped or made huge."""
        path = os.path.join(copy, "manifest.json")
        document = json.load(open(path))
        holders = [document] + document.get("tensors", [])[:50]
        holder = rng.choice(holders)
        key = rng.choice(sorted(holder))
        choice = rng.randrange(6)
        if choice == 0:
            del holder[key]
        elif choice == 1:
            holder[key] = "x" * rng.choice((0, 1, 1 << 16))
        elif choice == 2:
            holder[key] = rng.choice((-1, 0, 1 << 32, (1 << 64) - 1, 1e308, -1e308))
        elif choice == 3:
            holder[key] = [0] * rng.choice((0, 1 << 16))
        elif choice == 4:
            holder[key] = {"nested": holder.get(key)}
        else:
            holder[key] = "../" * rng.randint(1, 4) + "outside/x"
        open(path, "w").write(json.dumps(document))

    yield "tensor-bytes", True, flip
    yield "tensor-cut", False, cut
    yield "tensor-grown", False, grow
    yield "tensor-link", False, link_file
    yield "folder-link", False, link_folder
    yield "manifest-link", False, link_manifest
    yield "tensor-fifo", False, fifo
    yield "tensor-missing", False, remove
    for _ in range(2):
        yield "manifest-bytes", False, manifest_bytes
    for _ in range(4):
        yield "manifest-field", False, manifest_field


def organs_main(args):
    rng = random.Random(args.seed)
    sources, donor = source_files(args)
    outside = os.path.join(args.work, "outside")
    os.makedirs(outside)
    runs, variants, crashes, hangs, raw, heavy, changed, laundered, peak = 0, 0, [], [], [], [], [], [], 0
    for k, source in enumerate(sources):
        clean = os.path.join(args.work, f"s{k:03d}.organs")
        status, _, _ = run([args.organ, "extract", source, "-o", clean], args.timeout)
        if status != 0 or not json.load(open(os.path.join(clean, "manifest.json")))["tensors"]:
            shutil.rmtree(clean, ignore_errors=True)
            continue
        for m, (kind, tampered, apply) in enumerate(organ_variants(clean, rng)):
            d = os.path.join(args.work, f"v{k:03d}-{m:02d}-{kind}.organs")
            shutil.copytree(clean, d, symlinks=True)
            apply(d)
            variants += 1
            plan = d + ".plan.json"
            open(plan, "w").write(json.dumps({
                "format": "organ-graft-plan", "version": 1, "base": os.path.basename(d), "donors": {"d": donor},
                "operations": [{"op": "replace", "donor": "d", "system": "organ"}, {"op": "duplicate_layer", "layer": 0}]}))
            out = d[: -len(".organs")] + ".out"
            inside = os.path.join(d, "manifest.json")
            # (command, whether exit 0 writes something made from the directory's tensor bytes)
            commands = [
                (["inspect", d, "--tensors", "--metadata"], False),
                (["inspect", d, "--json"], False),
                (["validate", d], False),
                (["measure", d, "--no-cache", "--json", out + ".json"], False),
                (["fleet", d, "--no-cache", "--csv", out + ".csv"], False),
                (["vitals", d, "--tokens", "4"], True),
                (["graft", "--base", d, "--donor", donor, "--system", "organ", "-o", out + ".a.gguf"], True),
                (["graft", "--base", d, "--donor", donor, "--system", "organ", "-o", out + ".a.organs"], True),
                (["graft", "--base", donor, "--donor", d, "--layers", "0-1", "-o", out + ".b.gguf"], True),
                (["plan", "check", plan], False),
                (["assemble", "--plan", plan, "-o", out + ".c.gguf"], True),
                (["assemble", "--organs", d, "-o", out + ".d.gguf"], True),
                (["extract", d, "-o", out + ".e.organs"], True),
                (["purify", d, "--method", "haar", "--layers", "0-1", "-o", out + ".f.gguf"], True),
                # Outputs pointed into the input directory must be refused.
                (["measure", d, "--no-cache", "--json", inside], False),
                (["assemble", "--organs", d, "-o", inside], False),
                (["graft", "--base", d, "--donor", donor, "--layers", "0", "-o", out + ".g.gguf",
                  "--save-plan", inside], False),
                (["extract", donor, "-o", os.path.join(d, "organs")], False),
            ]
            before = tree_digest(d) if not kind.endswith("fifo") else None
            outside_before = tree_digest(outside)
            for command, copies in commands:
                status, kib, text = run([args.organ] + command, args.timeout)
                runs += 1
                peak = max(peak, kib)
                what = f"{os.path.basename(d)}: organ {' '.join(command[:2])} -> {status}"
                if status == "hang":
                    hangs.append(what)
                elif isinstance(status, str) or status not in (0, 1):
                    crashes.append(what)
                if raw_controls(text):
                    raw.append(what)
                if kib > args.memory_limit_mib * 1024:
                    heavy.append(f"{what} ({kib // 1024} MiB)")
                if tampered and copies and status == 0:
                    laundered.append(what)
                if (before is not None and tree_digest(d) != before) or tree_digest(outside) != outside_before:
                    changed.append(what)
                    before = tree_digest(d) if before is not None else None
                    outside_before = tree_digest(outside)
            shutil.rmtree(d, ignore_errors=True)
            for leftover in os.listdir(args.work):
                if leftover.startswith(os.path.basename(out)):
                    path = os.path.join(args.work, leftover)
                    shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)
        shutil.rmtree(clean, ignore_errors=True)
    ok = not (crashes or hangs or raw or heavy or changed or laundered)
    print(f"damaged organ directories: {variants} (from {len(sources)} sources), runs: {runs}")
    print(f"crashes: {len(crashes)}, hangs: {len(hangs)}, raw control bytes: {len(raw)}, over "
          f"{args.memory_limit_mib} MiB: {len(heavy)}, inputs or outside changed: {len(changed)}, tampered bytes "
          f"written as a success: {len(laundered)}; peak memory of a run: {peak / 1024:.1f} MiB")
    for line in crashes + hangs + raw + heavy + changed + laundered:
        print("  " + line)
    return 0 if ok else 1


class ApiServer:
    """organ serve on a free loopback port, restarted when it dies; its peak memory is kept."""

    def __init__(self, organ, root, timeout):
        self.organ, self.root, self.timeout = organ, root, timeout
        self.peak_kib, self.crashes, self.process = 0, [], None
        self.start()

    def start(self):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [self.organ, "serve", "--listen", "127.0.0.1:0", "--root", self.root, "--max-jobs", "4"],
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode("utf-8", "replace")
        self.port = int(re.search(r":(\d+)/v1/", line).group(1))

    def sample_memory(self):
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
        except OSError:
            pass

    def check_alive(self, case):
        """After each case: a server that died is a crash (named by the case) and is restarted."""
        self.sample_memory()
        if self.process.poll() is None:
            return
        self.crashes.append(f"{case} -> exit {self.process.returncode}")
        self.start()

    def stop(self):
        self.sample_memory()
        self.process.terminate()
        self.process.wait(10)


def api_request(server, method, target, body=None, raw_body=None, timeout=20.0):
    """One request on its own connection: (status, parsed JSON or None); status 'hang' when no
    answer came in time, 'closed' when the connection was closed without one."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        payload = raw_body if raw_body is not None else (None if body is None else json.dumps(body).encode())
        connection.request(method, target, body=payload, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        try:
            return answer.status, json.loads(data)
        except ValueError:
            return answer.status, None
    except socket.timeout:
        return "hang", None
    except (ConnectionError, http.client.HTTPException, OSError):
        return "closed", None
    finally:
        connection.close()


def raw_exchange(server, data, timeout=20.0):
    """Bytes as they are sent; the status of the first answer, 'hang' or 'closed'. The connection
    stays open for writing: an incomplete request is the server's to time out (408)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        try:
            s.sendall(data)
            got = b""
            while b"\r\n" not in got:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            return "hang"
        except OSError:
            return "closed"
    match = re.match(rb"HTTP/1\.1 (\d+)", got)
    return int(match.group(1)) if match else "closed"


def path_variants(name, rng):
    """Hostile spellings of a path inside the root, and paths that must be refused."""
    variants = [name, "./" + name, "../" + name, "/etc/passwd", "%2e%2e/" + name, name + "\x00.gguf",
                name.replace(".gguf", "\x1b[2J.gguf"), name + "\n", "a" * 5000, "", ".", "/", "links/out",
                "links/out/x.gguf", "links/in.gguf", "links/fifo.gguf", "links/zero.gguf", "special/fifo.gguf",
                "special", name + "/"]
    rng.shuffle(variants)
    return variants[:8]


def json_variants(body, rng):
    """A body with one field removed, retyped or made huge, and bodies that are not what they say."""
    yield body
    key = rng.choice(list(body))
    removed = dict(body)
    del removed[key]
    yield removed
    for value in (None, True, -1, 1e308, 18446744073709551616, "", "x" * 100000, [], {}, [[[[[[1]]]]]],
                  "\udcff"):
        changed = dict(body)
        changed[key] = value
        yield changed
    extra = dict(body)
    extra["unknown"] = 1
    yield extra


def raw_bodies(body):
    text = json.dumps(body).encode()
    return [text[: len(text) // 2], text + b"garbage", b"\xef\xbb\xbf" + text, text.replace(b'"', b"'"),
            b'{"path": "\xff\xfe"}', b"[" * 100 + b"]" * 100, b"{" + b'"a":1,' * 20000 + b'"a":2}', b"null"]


RAW_REQUESTS = [
    b"POST /v1/measure HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 27\r\n\r\nGET /v1/health HTTP/1.1\r\n\r\n",
    b"POST /v1/measure HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /v1/measure HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
    b"POST /v1/measure HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"POST /v1/measure HTTP/1.1\r\nContent-Length : 5\r\n\r\nabcde",
    b"GET /v1/health HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nno colon here\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /v1/health\r\n\r\n",
    b"GET http://127.0.0.1/v1/health HTTP/1.1\r\n\r\n",
    b"GET /v1/inspect?path=" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\n" + b"X-Many: 1\r\n" * 2000 + b"\r\n",
    b"GET /v1/health HTTP/1.1\r\nX-Nul: a\x00b\r\n\r\n",
    b"GET /v1/health HTTP/1.1\nHost: x\n\n",
    b"GET /v1/health HTTP/1.1\r\n\r\nGET /v1/health HTTP/1.1\r\n\r\nGET /v1/jobs HTTP/1.1\r\n\r\n",
    b"FOO /v1/health HTTP/1.1\r\n\r\n",
    b"GET v1/health HTTP/1.1\r\n\r\n",
    b"GET /v1/inspect?path=%zz HTTP/1.1\r\n\r\n",
    b"GET /v1/inspect?path=a&path=b HTTP/1.1\r\n\r\n",
    b"GET /v1/jobs/18446744073709551616 HTTP/1.1\r\n\r\n",
    b"DELETE /v1/jobs/-1 HTTP/1.1\r\n\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
]


def tree_digest(folder):
    """Every file and link under `folder` with its content, for telling whether anything changed."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            digest.update(path.encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()


def http_main(args):
    rng = random.Random(args.seed)
    sources, donor = source_files(args)
    root = os.path.join(args.work, "root")
    outside = os.path.join(args.work, "outside")
    for folder in ("models", "out", "links", "special"):
        os.makedirs(os.path.join(root, folder))
    os.makedirs(outside)
    shutil.copy(donor, os.path.join(root, "donor.gguf"))
    shutil.copy(donor, os.path.join(outside, "x.gguf"))
    os.symlink(outside, os.path.join(root, "links/out"))
    os.symlink(os.path.join(root, "donor.gguf"), os.path.join(root, "links/in.gguf"))
    os.mkfifo(os.path.join(root, "special/fifo.gguf"))
    os.symlink(os.path.join(root, "special/fifo.gguf"), os.path.join(root, "links/fifo.gguf"))
    os.symlink("/dev/zero", os.path.join(root, "links/zero.gguf"))
    outside_before = tree_digest(outside)
    server = ApiServer(args.organ, root, args.timeout)
    cases, hangs, errors, statuses = 0, [], [], {}

    def record(case, status):
        nonlocal cases
        cases += 1
        statuses[status] = statuses.get(status, 0) + 1
        if status == "hang":
            hangs.append(case)
        elif isinstance(status, int) and status >= 500:
            errors.append(f"{case} -> {status}")
        server.check_alive(case)

    def wait_for(href):
        """Polls a job until it ends or the timeout passes: its state, or None."""
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            polled, state = api_request(server, "GET", href, timeout=args.timeout)
            if polled != 200 or not isinstance(state, dict) or state.get("state") not in ("queued", "running", "cancelling"):
                return state.get("state") if isinstance(state, dict) else polled
            time.sleep(0.01)
        return None

    def job(case, target, body):
        """A request that may start a job: the job is polled to its end. One still running after
        the timeout is cancelled: ending then, it was slow ('slow'); still running, it hangs."""
        status, answer = api_request(server, "POST", target, body, timeout=args.timeout)
        if status == 202 and isinstance(answer, dict) and wait_for(answer["href"]) is None:
            api_request(server, "DELETE", answer["href"])
            status = "slow" if wait_for(answer["href"]) is not None else "hang"
        record(case, status)

    def plan(base, donor_path):
        return {"format": "organ-graft-plan", "version": 1, "base": base, "donors": {"d": donor_path},
                "operations": [{"op": "replace", "donor": "d", "system": "organ"}, {"op": "duplicate_layer", "layer": 0}]}

    for k, source in enumerate(sources):
        data = open(source, "rb").read()
        for m, (kind, mutant) in enumerate(mutations(data, rng)):
            name = f"models/m{k:03d}-{m:02d}-{kind}.gguf"
            with open(os.path.join(root, name), "wb") as f:
                f.write(mutant)
            quoted = urllib.parse.quote(name)
            out = f"out/m{k:03d}-{m:02d}"
            record(f"{name}: inspect", api_request(server, "GET", f"/v1/inspect?path={quoted}")[0])
            record(f"{name}: validate", api_request(server, "GET", f"/v1/validate?path={quoted}")[0])
            job(f"{name}: measure", "/v1/measure", {"path": name})
            job(f"{name}: extract", "/v1/extract", {"path": name, "output": out + ".organs"})
            job(f"{name}: assemble its organs", "/v1/assemble",
                {"plan": plan(out + ".organs", "donor.gguf"), "output": out + ".d.gguf"})
            manifest = os.path.join(root, out + ".organs", "manifest.json")
            if os.path.exists(manifest):
                damaged = bytearray(open(manifest, "rb").read())
                for _ in range(rng.randint(1, 4)):
                    damaged[rng.randrange(len(damaged))] = rng.randrange(256)
                open(manifest, "wb").write(bytes(damaged))
                record(f"{name}: inspect damaged organs",
                       api_request(server, "GET", f"/v1/inspect?path={urllib.parse.quote(out)}.organs")[0])
                job(f"{name}: assemble damaged organs", "/v1/assemble",
                    {"plan": plan(out + ".organs", "donor.gguf"), "output": out + ".g.gguf"})
            job(f"{name}: purify fft", "/v1/purify",
                {"path": name, "output": out + ".e.gguf", "method": "fft", "system": "organ"})
            job(f"{name}: purify haar", "/v1/purify",
                {"path": name, "output": out + ".f.gguf", "method": "haar", "layers": "0-1"})
            job(f"{name}: assemble as base", "/v1/assemble", {"plan": plan(name, "donor.gguf"), "output": out + ".a.gguf"})
            job(f"{name}: assemble as donor", "/v1/assemble", {"plan": plan("donor.gguf", name), "output": out + ".b"})
            # A plan file beside the mutant, naming it and the donor relative to its own folder.
            plan_file = f"models/m{k:03d}-{m:02d}.plan.json"
            with open(os.path.join(root, plan_file), "w") as f:
                json.dump(plan(os.path.basename(name), "../donor.gguf"), f)
            record(f"{name}: plan check", api_request(server, "POST", "/v1/plan/check", {"plan_path": plan_file})[0])
            job(f"{name}: assemble plan file", "/v1/assemble", {"plan_path": plan_file, "output": out + ".c.gguf"})
        if k % 10 == 9 or k == len(sources) - 1:
            job(f"fleet after source {k}", "/v1/fleet", {"paths": ["models"]})
    # Hostile paths through every endpoint that takes one.
    for path in path_variants("donor.gguf", rng) + path_variants("models", rng):
        quoted = urllib.parse.quote(path, safe="/")
        record(f"inspect {path!r}", api_request(server, "GET", f"/v1/inspect?path={quoted}")[0])
        record(f"validate {path!r}", api_request(server, "GET", f"/v1/validate?path={quoted}")[0])
        job(f"measure {path!r}", "/v1/measure", {"path": path})
        job(f"extract {path!r}", "/v1/extract", {"path": path, "output": f"out/p{cases}"})
        job(f"extract to {path!r}", "/v1/extract", {"path": "donor.gguf", "output": path})
        job(f"purify to {path!r}", "/v1/purify", {"path": "donor.gguf", "output": path, "method": "haar"})
        job(f"assemble to {path!r}", "/v1/assemble", {"plan": plan("donor.gguf", "donor.gguf"), "output": path})
        job(f"assemble from {path!r}", "/v1/assemble", {"plan": plan(path, "donor.gguf"), "output": f"out/q{cases}.gguf"})
        job(f"fleet {path!r}", "/v1/fleet", {"paths": [path]})
        record(f"plan check {path!r}", api_request(server, "POST", "/v1/plan/check", {"plan_path": path})[0])
    # Mutated bodies.
    bodies = [("/v1/measure", {"path": "donor.gguf", "sample": 64}),
              ("/v1/fleet", {"paths": ["models"], "sample": 64}),
              ("/v1/extract", {"path": "donor.gguf", "output": "out/b"}),
              ("/v1/purify", {"path": "donor.gguf", "output": "out/b.gguf", "method": "fft", "keep": 0.5,
                              "layers": "0-1", "system": "organ"}),
              ("/v1/assemble", {"plan": plan("donor.gguf", "donor.gguf"), "output": "out/c.gguf", "keep_invalid": False}),
              ("/v1/plan/check", {"plan": plan("donor.gguf", "donor.gguf")})]
    for target, body in bodies:
        for n, variant in enumerate(json_variants(body, rng)):
            variant = dict(variant)
            if "output" in variant and isinstance(variant["output"], str):
                variant["output"] = f"{variant['output']}-{cases}-{n}"
            try:
                job(f"{target} {json.dumps(variant)[:80]}", target, variant)
            except (TypeError, ValueError):
                pass
        for raw_body in raw_bodies(body):
            record(f"{target} raw {raw_body[:40]!r}", api_request(server, "POST", target, raw_body=raw_body)[0])
    for data in RAW_REQUESTS:
        record(f"raw {data[:50]!r}", raw_exchange(server, data, args.timeout))
    server.stop()
    crashes = server.crashes
    outside_changed = tree_digest(outside) != outside_before
    heavy = server.peak_kib > args.memory_limit_mib * 1024
    ok = not (crashes or hangs or errors or outside_changed or heavy)
    print(f"HTTP cases: {cases}; answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=str)) +
          " ('slow': a job still running after the timeout, cancelled then)")
    print(f"crashes: {len(crashes)}, hangs: {len(hangs)}, 5xx answers: {len(errors)}, outside the root changed: "
          f"{'yes' if outside_changed else 'no'}; peak memory of the server: {server.peak_kib / 1024:.1f} MiB")
    for line in crashes + hangs + errors:
        print("  " + line)
    return 0 if ok else 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("organ")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--http", action="store_true", help="drive `organ serve` instead of the commands")
    mode.add_argument("--organs", action="store_true", help="attack organ directories instead of GGUF files")
    parser.add_argument("--models", default=os.path.join(here, "../../../shared/models"))
    parser.add_argument("--count", type=int, default=40, help="source files to mutate (default 40)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", default="/tmp/organ-mutation-run")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-limit-mib", type=int, default=512)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    os.environ["ORGAN_CACHE_DIR"] = os.path.join(args.work, "cache")
    if args.http:
        return http_main(args)
    return organs_main(args) if args.organs else commands_main(args)


if __name__ == "__main__":
    sys.exit(main())
