# ctest predictor_offset_eval_doc: docs/offset-eval.md must be what
# mosaic-offset-eval writes on the committed data and models (the doc is
# generated, never edited by hand). Run by tests/predictor/CMakeLists.txt
# with EVAL (the tool), DATA, MODELS, OUT (a scratch file) and DOC (the
# committed doc).
execute_process(COMMAND ${EVAL} --data ${DATA} --models ${MODELS} --doc ${OUT}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mosaic-offset-eval --doc ${OUT} failed (exit ${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${DOC}
                RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  execute_process(COMMAND diff -u ${DOC} ${OUT})
  message(FATAL_ERROR "${DOC} is not what mosaic-offset-eval writes on the committed data "
                      "and models (diff above: - committed, + written now). Regenerate it "
                      "from the repository root with\n"
                      "  build/bin/mosaic-offset-eval --doc docs/offset-eval.md\n"
                      "and commit it with the change that moved the scores.")
endif()
