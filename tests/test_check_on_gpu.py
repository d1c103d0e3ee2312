"""`benchmarks/check_on_gpu.py`, the script that checks compiled cases on
the GPU machine: what it reports when a case goes wrong there."""

from __future__ import annotations

from benchmarks import check_on_gpu, gpu_check, gpu_random_check


def test_a_check_that_hangs_under_memcheck_prints_what_memcheck_reported(monkeypatch, capsys, tmp_path):
    report = ("========= Invalid __global__ read of size 8 bytes\n"
              "=========     at main_dispatch_5_matmul_like_4x4x24x260_f16xf16xf32+0x550\n"
              "=========     and is 9 bytes after the nearest allocation at 0x2a9a008400 of size 75,904 bytes\n"
              "=========     Saved host backtrace up to driver entry point at kernel launch time\n").encode()

    def hangs(command, **_):
        assert command[0].endswith("compute-sanitizer")
        raise check_on_gpu.subprocess.TimeoutExpired(command, 1, output=report, stderr=b"")

    monkeypatch.setattr(check_on_gpu.subprocess, "run", hangs)
    case = gpu_random_check.case(gpu_random_check.draws(20261126, 1)[0])
    assert not check_on_gpu.check(tmp_path, case, memcheck=True)
    printed = capsys.readouterr().out
    assert "timeout" in printed and "matmul_like_4x4x24x260" in printed and "75,904 bytes" in printed
    assert "backtrace" not in printed


def test_a_dynamic_batch_case_runs_at_each_of_its_batch_sizes(monkeypatch, tmp_path):
    seen = []

    def runs(command, **_):
        dy = next(flag for flag in command if flag.startswith("--input=") and "dy" in flag)
        seen.append(check_on_gpu.np.load(dy.split("@", 1)[1]).shape)
        return check_on_gpu.subprocess.CompletedProcess(command, 1, "", "no GPU here")

    monkeypatch.setattr(check_on_gpu.subprocess, "run", runs)
    case = next(c for c in gpu_check.CASES if c.dynamic_batch and c.dtype == "f16")
    described = dict(case._asdict(), shapes=gpu_check.shapes(case), arguments=gpu_check.arguments(case))
    assert not check_on_gpu.check(tmp_path, described, memcheck=False)
    assert [shape[0] for shape in seen] == [case.n, case.n + 1]
    assert all(shape[1:] == tuple(described["shapes"]["dy"][1:]) for shape in seen)


def test_gpu_check_lowers_its_dynamic_batch_cases_with_a_dynamic_batch():
    case = next(c for c in gpu_check.CASES if c.name == "1x1_s2_dynbatch_f16")
    text = gpu_check._mlir(case)
    assert "tensor<?x128x14x14xf16>" in text and "tensor<?x64x28x28xf16>" in text
    assert "hal.dispatch.extern" not in text  # the kernel is for static shapes
