CMakeFiles/recur_script.dir/gen/expr.c.o: /work/main/gen/expr.c \
 /usr/include/stdc-predef.h
