
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/gen/emit_expr.c" "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o.d"
  "/work/main/gen/irb.c" "CMakeFiles/recur_gen.dir/gen/irb.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/irb.c.o.d"
  "/work/main/gen/target.c" "CMakeFiles/recur_gen.dir/gen/target.c.o" "gcc" "CMakeFiles/recur_gen.dir/gen/target.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-ref/CMakeFiles/recur_script.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
