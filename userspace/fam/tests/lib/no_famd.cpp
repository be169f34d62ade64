// SPDX-License-Identifier: GPL-2.0
// The C++ API against libunimem_fam on a host without famd: fam_initialize throws a
// Fam_Exception with FAM_ERR_RPC or FAM_ERR_TIMEOUT and a message. Exit 0 on success.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <cstdio>

int main() {
    openfam::fam *f = new openfam::fam();
    Fam_Options o = Fam_Options();
    try {
        f->fam_initialize("default", &o);
        std::fprintf(stderr, "fam_initialize succeeded without famd\n");
        return 1;
    } catch (openfam::Fam_Exception &e) {
        std::printf("Fam_Exception %d: %s\n", e.fam_error(), e.fam_error_msg());
        if (e.fam_error() != openfam::FAM_ERR_RPC && e.fam_error() != openfam::FAM_ERR_TIMEOUT)
            return 1;
    }
    delete f;
    return 0;
}
