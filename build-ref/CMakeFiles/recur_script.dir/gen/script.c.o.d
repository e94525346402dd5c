CMakeFiles/recur_script.dir/gen/script.c.o: /work/main/gen/script.c \
 /usr/include/stdc-predef.h
