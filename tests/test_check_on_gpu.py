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


def test_a_refused_case_is_checked_as_given_and_as_users_get_it(monkeypatch, tmp_path):
    """Code that `pipeline` refuses as wrong is checked as it is (was the
    refusal needed?) and as `compile_fallback` gives it to users."""
    refused = {"3x3_s2_g4_c128_f16", "upstream_1x1_s2_f16"}
    monkeypatch.setattr(gpu_check, "_mlir", lambda case, options=None: case.name)
    monkeypatch.setattr(gpu_check.modules, "compiled",
                        lambda text, target, flags: (b"given", "overread" if text in refused else None))
    monkeypatch.setattr(gpu_check.compile_fallback, "compile_lowering", lambda lower, options: lower(options).encode())
    gpu_check.prepare(tmp_path, ["3x3_s2_g4_c128_f16", "upstream_1x1_s2_f16", "1x1_s2_odd_f16"])
    described = {case["name"]: case for case in gpu_check.json.loads((tmp_path / "cases.json").read_text())}
    assert set(described) == {"3x3_s2_g4_c128_f16", "3x3_s2_g4_c128_f16_as_users_get", "upstream_1x1_s2_f16",
                              "1x1_s2_odd_f16"}
    assert described["3x3_s2_g4_c128_f16"]["wrong_code"] == "overread"
    assert described["3x3_s2_g4_c128_f16_as_users_get"]["wrong_code"] is None
    assert (tmp_path / "3x3_s2_g4_c128_f16_as_users_get.vmfb").read_bytes() == b"3x3_s2_g4_c128_f16"
    assert described["3x3_s2_g4_c128_f16_as_users_get"]["shapes"] == described["3x3_s2_g4_c128_f16"]["shapes"]
