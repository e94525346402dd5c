file(REMOVE_RECURSE
  "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o"
  "CMakeFiles/recur_gen.dir/gen/emit_expr.c.o.d"
  "CMakeFiles/recur_gen.dir/gen/gen.c.o"
  "CMakeFiles/recur_gen.dir/gen/gen.c.o.d"
  "CMakeFiles/recur_gen.dir/gen/irb.c.o"
  "CMakeFiles/recur_gen.dir/gen/irb.c.o.d"
  "CMakeFiles/recur_gen.dir/gen/target.c.o"
  "CMakeFiles/recur_gen.dir/gen/target.c.o.d"
  "CMakeFiles/recur_gen.dir/templates/carry.c.o"
  "CMakeFiles/recur_gen.dir/templates/carry.c.o.d"
  "CMakeFiles/recur_gen.dir/templates/common.c.o"
  "CMakeFiles/recur_gen.dir/templates/common.c.o.d"
  "CMakeFiles/recur_gen.dir/templates/scan_bwd.c.o"
  "CMakeFiles/recur_gen.dir/templates/scan_bwd.c.o.d"
  "CMakeFiles/recur_gen.dir/templates/scan_fwd.c.o"
  "CMakeFiles/recur_gen.dir/templates/scan_fwd.c.o.d"
  "CMakeFiles/recur_gen.dir/templates/setup.c.o"
  "CMakeFiles/recur_gen.dir/templates/setup.c.o.d"
  "librecur_gen.a"
  "librecur_gen.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/recur_gen.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
