# The host benchmarks of issue 15's costs phase (tests/arbiter/bench_arbiter.sh:
# bench_launch, bench_sched_grant, bench_decide), for a build with the tests
# off (the Release tree carried to the GPU host, -DMOSAIC_BUILD_TESTS=OFF).
# With the tests on, tests/CMakeLists.txt, tests/sched and tests/arbiter
# define the same three targets beside their tests; keep the two in step.
# None needs cmocka: they print numbers and assert nothing about time.
add_executable(bench_launch ${PROJECT_SOURCE_DIR}/tests/bench/bench_launch.c)
target_include_directories(bench_launch PRIVATE ${MOSAIC_CUDA_INCLUDE_DIR})
target_link_libraries(bench_launch PRIVATE ${CMAKE_DL_LIBS})
add_executable(bench_sched_grant ${PROJECT_SOURCE_DIR}/tests/sched/bench_sched_grant.c)
target_link_libraries(bench_sched_grant PRIVATE mosaic_sched_client)
add_executable(bench_decide ${PROJECT_SOURCE_DIR}/tests/arbiter/bench_decide.c)
target_link_libraries(bench_decide PRIVATE mosaic_sched_core)
# The HP request timed whole (tests/arbiter/bench_hp_request.sh, the costs
# phase's side-by-side of the HP client's request path).
add_executable(bench_request ${PROJECT_SOURCE_DIR}/tests/bench/bench_request.c)
target_include_directories(bench_request PRIVATE ${MOSAIC_CUDA_INCLUDE_DIR})
target_link_libraries(bench_request PRIVATE ${CMAKE_DL_LIBS})
