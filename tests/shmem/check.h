/* Shared by the OpenSHMEM test programs: a failed check names the PE, the place and the
 * values, and exits 1 (oshrun then stops the other PEs and exits non-zero). */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "FAIL PE %d %s:%d: %s: ", shmem_my_pe(), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                       \
      fprintf(stderr, "\n");                                                              \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#endif
