# The predictor's tools (issue 4), included from tools/CMakeLists.txt:
#   mosaic-predict  prediction for two kernel profiles (library only)
#   mosaic-train    trains and evaluates the models (needs libxgboost:
#                   Debian libxgboost-dev); skipped with a message without it
if(TARGET mosaic_predict)
  add_executable(mosaic-predict ${CMAKE_CURRENT_LIST_DIR}/mosaic_predict.c)
  target_link_libraries(mosaic-predict PRIVATE mosaic_predict)
  target_compile_definitions(mosaic-predict PRIVATE
      MOSAIC_DEFAULT_MODELS="${PROJECT_SOURCE_DIR}/predictor/models/h200")

  find_library(MOSAIC_XGBOOST_LIBRARY NAMES xgboost)
  find_path(MOSAIC_XGBOOST_INCLUDE_DIR NAMES xgboost/c_api.h)
  if(MOSAIC_XGBOOST_LIBRARY AND MOSAIC_XGBOOST_INCLUDE_DIR)
    add_executable(mosaic-train ${CMAKE_CURRENT_LIST_DIR}/mosaic_train.c)
    target_include_directories(mosaic-train SYSTEM PRIVATE ${MOSAIC_XGBOOST_INCLUDE_DIR})
    target_link_libraries(mosaic-train PRIVATE mosaic_predict ${MOSAIC_XGBOOST_LIBRARY})
  else()
    message(STATUS "libxgboost (libxgboost-dev) not found: mosaic-train is not "
                   "built; the predictor and mosaic-predict are")
  endif()
endif()

# mosaic-offset-eval scores the predictor on the issue 14 offset and MPS
# co-runs (library only; it reads the dataset through train_internal.h).
if(TARGET mosaic_predict)
  add_executable(mosaic-offset-eval ${CMAKE_CURRENT_LIST_DIR}/mosaic_offset_eval.c)
  target_link_libraries(mosaic-offset-eval PRIVATE mosaic_predict)
  target_include_directories(mosaic-offset-eval PRIVATE
      ${PROJECT_SOURCE_DIR}/predictor ${PROJECT_SOURCE_DIR}/core)
endif()
