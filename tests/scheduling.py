"""The order in which ``-n N`` hands whole test files to the xdist workers (``tests/conftest.py``'s
``pytest_xdist_make_scheduler``).

xdist's ``loadfile`` hands out the files with the most tests first, so the files of few but long
tests (fresh processes, many compiled programs) come last, and one worker can run one of them
while the other has nothing left: the run ends when the last of them does.  Here the files still
queued after the first ones are sorted by their expected time instead, the longest first (the
usual greedy rule for two machines), so that the run ends on short files.  The expected time is a
file's measured seconds where :data:`SECONDS` has them (a whole-suite ``--durations=0`` run,
rounded), else its number of tests times :data:`SECONDS_PER_TEST`.

xdist's scheduler also counts a worker's pending tests over every file it was ever given, after
every test (a cost that grows with the square of the suite); a file whose tests are all done is
dropped from that count here.
"""
from __future__ import annotations

#: the default guess for a file not in :data:`SECONDS`: a quick test's time, setup and report included
SECONDS_PER_TEST = 0.06

#: measured seconds of the files whose tests are few and long, or many and slow (tests/, conformance/;
#: -n 2 on 2 cores, session 22); a renamed or removed file here is only a lost hint
SECONDS = {
    "conformance/test_differential.py": 70,
    "tests/test_lax.py": 68,
    "tests/test_random_half.py": 64,
    "tests/test_random.py": 56,
    "tests/executors/test_jax_tpu_lowering.py": 46,
    "conformance/test_transforms_quick.py": 45,
    "tests/test_random_jit.py": 40,
    "tests/executors/test_jax_x64_scope.py": 40,
    "tests/test_random_sampling_bits.py": 39,
    "tests/executors/test_jax_eager_clients.py": 36,
    "tests/api/test_extension_dtypes.py": 34,
    "tests/executors/test_numba_cache.py": 30,
    "tests/api/test_indexing_modes.py": 29,
    "tests/api/test_linalg.py": 28,
    "tests/executors/test_fusion.py": 27,
    "tests/test_random_vmap.py": 26,
    "tests/transforms/test_vmap_rules.py": 26,
    "tests/executors/test_tall_svd.py": 25,
    "tests/executors/test_faults.py": 24,
    "tests/test_interop.py": 23,
    "tests/test_nn.py": 22,
    "tests/transforms/test_vmap_control.py": 22,
    "tests/transforms/test_ad_functions.py": 22,
    "tests/sharding/test_tuple_axes.py": 22,
    "tests/executors/test_jax_permuted.py": 20,
    "tests/transforms/test_eig_rules.py": 18,
    "tests/sharding/test_tutorial.py": 16,
    "tests/transforms/test_jit_memory.py": 15,
    "tests/sharding/test_shard_map_checks.py": 15,
    "tests/test_conv_kernel_gradient_host.py": 15,
    "tests/executors/test_jax_heap.py": 12,
    "tests/sharding/test_jit_indexing.py": 11,
    "conformance/test_report.py": 10,
    "tests/transforms/test_pmap.py": 10,
    "tests/executors/test_numba_interrupts.py": 8,
    "tests/transforms/test_control_flow_nested.py": 8,
    "conformance/test_tpu_probe.py": 7,
    "tests/test_benchmarks.py": 7,
    "tests/sharding/test_sharding.py": 6,
    "tests/transforms/test_pmap_dask_stages.py": 6,
    "conformance/test_report_narrowed.py": 6,
    "tests/executors/test_numba_math_lazy.py": 5,
    "tests/executors/test_loading.py": 5,
    "tests/test_main.py": 5,
    "tests/executors/test_dask_lost_data.py": 5,
    "tests/transforms/test_pmap_blocks.py": 5,
    "tests/sharding/test_basic_indexing.py": 4,
    "conformance/test_sharding_rows.py": 4,
    "tests/test_readme_examples.py": 4,
}


def expected_seconds(path: str, tests: int) -> float:
    """The time a file of ``tests`` tests is expected to take (``path`` relative to the root, '/')."""
    return SECONDS.get(path, tests * SECONDS_PER_TEST)


def longest_first(queue) -> None:
    """Reorder ``queue`` (an OrderedDict of file path -> {test id: done}) in place: the files
    expected to take longest first."""
    files = sorted(queue, key=lambda path: -expected_seconds(path, len(queue[path])))
    for path in files:
        queue.move_to_end(path)


def file_scheduler(config, log):
    """xdist's ``loadfile`` scheduler with the two changes the module docstring gives."""
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def schedule(self) -> None:
            first = self.collection is None
            super().schedule()  # the first files go out at once, in xdist's order
            if first and self.workqueue:
                longest_first(self.workqueue)

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            scope = self._split_scope(self.registered_collections[node][item_index])
            work = self.assigned_work.get(node, {})
            if scope in work and all(work[scope].values()):
                del work[scope]  # done: no longer counted after each test

    return LongestFirst(config, log)
