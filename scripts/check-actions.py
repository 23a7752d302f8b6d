#!/usr/bin/env python3
"""Checks what GitHub Actions will run, without GitHub: the workflows under .github/workflows and
the action (action.yml) parse as YAML and have the shape Actions expects, and the action's steps,
run here as the runner runs them (bash -eo pipefail, its env with the inputs put in), install a
release from a local dist/ (GPU_ADMISSION_DOWNLOAD_URL=file://...): latest, a pinned version, and
refusals of a tarball that does not match SHA256SUMS, of a too old glibc and of a missing repository.

    scripts/check-actions.py [dist]        # after scripts/release.sh VERSION
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("check-actions: PyYAML is missing: apt-get install -y python3-yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL {message}")


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def check_steps(where, steps, composite):
    if not isinstance(steps, list) or not steps:
        fail(f"{where}: no steps")
        return
    for i, step in enumerate(steps):
        kinds = [k for k in ("uses", "run") if k in step]
        if len(kinds) != 1:
            fail(f"{where}: step {i} needs exactly one of uses and run, has {kinds}")
        if composite and "run" in step and "shell" not in step:
            fail(f"{where}: step {i} runs a script without shell (composite steps need one)")


def check_workflow(path):
    doc = load(path)
    # YAML 1.1 reads the key `on` as true; Actions reads it as `on`.
    trigger = doc.get("on", doc.get(True))
    if not trigger:
        fail(f"{path}: no `on`")
    jobs = doc.get("jobs") or {}
    if not jobs:
        fail(f"{path}: no jobs")
    for name, job in jobs.items():
        if "runs-on" not in job:
            fail(f"{path}: job {name} has no runs-on")
        for need in [job["needs"]] if isinstance(job.get("needs"), str) else job.get("needs", []):
            if need not in jobs:
                fail(f"{path}: job {name} needs unknown job {need}")
        check_steps(f"{path}: job {name}", job.get("steps"), composite=False)
    print(f"ok   {os.path.relpath(path, ROOT)}: {len(jobs)} job(s)")


def substitute(text, inputs):
    def value(match):
        expr = match.group(1).strip()
        if expr.startswith("inputs."):
            return inputs.get(expr[len("inputs."):], "")
        if expr == "github.action_repository":
            return inputs.get("_action_repository", "")
        raise ValueError(f"expression {expr} is not known to this check")
    return re.sub(r"\$\{\{(.*?)\}\}", value, str(text))


def run_action(action, inputs, extra_path=None):
    """Runs the composite action's steps as the runner does; returns (rc, output, GITHUB_PATH, outputs)."""
    values = {name: str(spec.get("default", "")) for name, spec in action.get("inputs", {}).items()}
    values.update(inputs)
    work = tempfile.mkdtemp(prefix="check-actions.")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GPU_ADMISSION_", "INPUT_"))}
        env.update(GITHUB_ACTION_PATH=ROOT, GITHUB_PATH=f"{work}/path", GITHUB_OUTPUT=f"{work}/output",
                   RUNNER_TOOL_CACHE=f"{work}/tools", RUNNER_TEMP=f"{work}/tmp")
        if extra_path:
            env["PATH"] = f"{extra_path}:{env['PATH']}"
        os.makedirs(env["RUNNER_TEMP"])
        output = ""
        for step in action["runs"]["steps"]:
            step_env = dict(env)
            step_env.update({k: substitute(v, values) for k, v in step.get("env", {}).items()})
            script = substitute(step["run"], values)
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                                  env=step_env, cwd=work, capture_output=True, text=True)
            output += proc.stdout + proc.stderr
            if proc.returncode != 0:
                return proc.returncode, output, "", {}
        gh_path = open(env["GITHUB_PATH"]).read() if os.path.exists(env["GITHUB_PATH"]) else ""
        outputs = {}
        if os.path.exists(env["GITHUB_OUTPUT"]):
            for line in open(env["GITHUB_OUTPUT"]):
                key, _, val = line.rstrip("\n").partition("=")
                outputs[key] = val
        # The next step of the job sees bin/ on PATH: run the binary from there.
        for folder in gh_path.split():
            probe = subprocess.run([f"{folder}/gpu-admission", "policy", "show", "--default"],
                                   capture_output=True, text=True)
            if probe.returncode != 0:
                return probe.returncode, output + probe.stderr, gh_path, outputs
        return 0, output, gh_path, outputs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def expect(what, result, ok, contains=""):
    rc, output, _, _ = result
    if (rc == 0) != ok or contains not in output:
        fail(f"action: {what}: exit {rc}\n{output[-1500:]}")
    else:
        print(f"ok   action: {what}")


def check_action(dist):
    action = load(os.path.join(ROOT, "action.yml"))
    if action.get("runs", {}).get("using") != "composite":
        fail("action.yml: runs.using is not composite")
    check_steps("action.yml", action.get("runs", {}).get("steps"), composite=True)
    sums = open(os.path.join(dist, "SHA256SUMS")).read()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    match = re.search(rf"gpu-admission-(\S+)-linux-{arch}\.tar\.gz", sums)
    if not match:
        print(f"skip action: {dist} has no linux-{arch} tarball for this machine")
        return
    version = match.group(1)
    url = "file://" + os.path.abspath(dist)

    rc, output, gh_path, outputs = result = run_action(action, {"download-url": url})
    expect("latest from a local dist/", result, True)
    if rc == 0 and (outputs.get("version") != version or not gh_path.strip().endswith("/bin")):
        fail(f"action: outputs {outputs} and GITHUB_PATH {gh_path!r} are not version {version} and a bin/ folder")
    expect(f"version v{version}", run_action(action, {"download-url": url, "version": f"v{version}"}), True)
    expect("an unknown version is refused", run_action(action, {"download-url": url, "version": "99.0.0"}),
           False, "could not download")

    with tempfile.TemporaryDirectory() as bad:
        for name in os.listdir(dist):
            shutil.copy(os.path.join(dist, name), bad)
        with open(os.path.join(bad, "SHA256SUMS"), "w") as f:
            f.write(re.sub(r"^[0-9a-f]{64}", "0" * 64, sums, flags=re.M))
        expect("a tarball that does not match SHA256SUMS is refused",
               run_action(action, {"download-url": "file://" + bad}), False, "does not match")

    with tempfile.TemporaryDirectory() as fake:
        with open(os.path.join(fake, "getconf"), "w") as f:
            f.write("#!/bin/sh\necho 'glibc 2.31'\n")
        os.chmod(os.path.join(fake, "getconf"), 0o755)
        expect("an older glibc is refused with a message",
               run_action(action, {"download-url": url}, extra_path=fake), False, "needs glibc")

    expect("no repository and no download-url is refused", run_action(action, {}), False, "is not OWNER/NAME")


def main():
    dist = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "dist")
    workflows = os.path.join(ROOT, ".github", "workflows")
    for name in sorted(os.listdir(workflows)):
        if name.endswith((".yml", ".yaml")):
            check_workflow(os.path.join(workflows, name))
    if not os.path.exists(os.path.join(dist, "SHA256SUMS")):
        sys.exit(f"check-actions: no {dist}/SHA256SUMS: run scripts/release.sh VERSION first")
    check_action(dist)
    if failures:
        sys.exit(f"check-actions: {len(failures)} problem(s)")
    print("check-actions: the workflows parse and the action installs from", dist)


if __name__ == "__main__":
    main()
