-- expect: bad argument #1 to 'dofile'
dofile() -- here
