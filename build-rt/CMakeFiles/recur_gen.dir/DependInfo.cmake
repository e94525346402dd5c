
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/gen/emit_expr.c" "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o.d"
  "/work/main/gen/gen.c" "CMakeFiles/recur_gen.dir/gen/gen.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/gen.c.o.d"
  "/work/main/gen/irb.c" "CMakeFiles/recur_gen.dir/gen/irb.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/irb.c.o.d"
  "/work/main/gen/target.c" "CMakeFiles/recur_gen.dir/gen/target.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/target.c.o.d"
  "/work/main/templates/carry.c" "CMakeFiles/recur_gen.dir/templates/carry.c.o" "gcc" "CMakeFiles/recur_gen.dir/templates/carry.c.o.d"
  "/work/main/templates/common.c" "CMakeFiles/recur_gen.dir/templates/common.c.o" "gcc" "CMakeFiles/recur_gen.dir/templates/common.c.o.d"
  "/work/main/templates/scan_bwd.c" "CMakeFiles/recur_gen.dir/templates/scan_bwd.c.o" "gcc" "CMakeFiles/recur_gen.dir/templates/scan_bwd.c.o.d"
  "/work/main/templates/scan_fwd.c" "CMakeFiles/recur_gen.dir/templates/scan_fwd.c.o" "gcc" "CMakeFiles/recur_gen.dir/templates/scan_fwd.c.o.d"
  "/work/main/templates/setup.c" "CMakeFiles/recur_gen.dir/templates/setup.c.o" "gcc" "CMakeFiles/recur_gen.dir/templates/setup.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-rt/CMakeFiles/recur_script.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
