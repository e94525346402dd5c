
# Per-language clean rules from dependency scanning.
foreach(lang )
  include(CMakeFiles/omp_gen.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
