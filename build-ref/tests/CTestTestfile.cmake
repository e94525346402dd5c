# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-ref/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[test_goldens]=] "/work/main/build-ref/tests/test_goldens")
set_tests_properties([=[test_goldens]=] PROPERTIES  ENVIRONMENT "RECUR_SOURCE_DIR=/work/main;RECUR_GOLDENS=/work/main/../shared/goldens" SKIP_RETURN_CODE "77" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;17;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_npy]=] "/work/main/build-ref/tests/test_npy")
set_tests_properties([=[test_npy]=] PROPERTIES  ENVIRONMENT "RECUR_SOURCE_DIR=/work/main;RECUR_GOLDENS=/work/main/../shared/goldens" SKIP_RETURN_CODE "77" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;17;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_ref_fd]=] "/work/main/build-ref/tests/test_ref_fd")
set_tests_properties([=[test_ref_fd]=] PROPERTIES  ENVIRONMENT "RECUR_SOURCE_DIR=/work/main;RECUR_GOLDENS=/work/main/../shared/goldens" SKIP_RETURN_CODE "77" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;17;add_test;/work/main/tests/CMakeLists.txt;0;")
