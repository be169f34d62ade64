// Shared by the OpenFAM C++ test programs: check.h's CHECK, patterns and names, plus the
// C++ API's error checks. Every failed call of openfam::fam throws openfam::Fam_Exception
// carrying a Fam_Error code (fam_error()) and a message.
//   EXPECT_FAM_ERROR(expr, code)  expr throws a Fam_Exception whose fam_error() is code
//   STEP("what")                  names what the program does next; an exception nobody
//                                 expected is reported with it (ft_main)
#ifndef FAM_TEST_CHECK_HPP
#define FAM_TEST_CHECK_HPP
#include <fam/fam.h>

#include "check.h"

using namespace openfam;

// What the program is doing, for an unexpected exception's message.
inline const char *&ft_step() {
  static const char *step = "start";
  return step;
}
#define STEP(what) (ft_step() = (what))

#define EXPECT_FAM_ERROR(expr, code)                                                       \
  do {                                                                                     \
    bool ft_threw_ = false;                                                                \
    try {                                                                                  \
      expr;                                                                                \
    } catch (Fam_Exception & ft_e_) {                                                      \
      ft_threw_ = true;                                                                    \
      CHECK(ft_e_.fam_error() == (code), "threw %d (%s: %s), expected %s",                \
            ft_e_.fam_error(), ft_err_name(ft_e_.fam_error()), ft_e_.fam_error_msg(),      \
            ft_err_name(code));                                                            \
    }                                                                                      \
    CHECK(ft_threw_, "did not throw, expected %s", ft_err_name(code));                     \
  } while (0)

// The int value of option NAME (PE_ID, PE_COUNT), freed.
inline int ft_option_int(fam *f, const char *name) {
  const int *v = static_cast<const int *>(f->fam_get_option(const_cast<char *>(name)));
  int r = *v;
  free(const_cast<int *>(v));
  return r;
}

// Runs BODY (the test); an exception it did not expect fails the test with the step.
inline int ft_main(const char *name, void (*body)(fam *f)) {
  fam *f = NULL;
  try {
    STEP("fam_initialize");
    f = new fam();
    f->fam_initialize(FT_GROUP, NULL);
    FT_PE = ft_option_int(f, "PE_ID");
    body(f);
    STEP("fam_finalize");
    f->fam_finalize(FT_GROUP);
    delete f;
  } catch (Fam_Exception &e) {
    fprintf(stderr, "FAIL PE %d: %s: %s: unexpected Fam_Exception %d (%s): %s\n", FT_PE, name,
            ft_step(), e.fam_error(), ft_err_name(e.fam_error()), e.fam_error_msg());
    return 1;
  }
  printf("PE %d: %s ok\n", FT_PE, name);
  fflush(stdout);
  return 0;
}

#endif
