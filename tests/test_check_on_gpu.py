"""`benchmarks/check_on_gpu.py`, the script that checks compiled cases on
the GPU machine: what it reports when a case goes wrong there."""

from __future__ import annotations

from benchmarks import check_on_gpu, gpu_random_check


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
