/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fam/fam_exception.h: the exception the OpenFAM C++ API throws, and its error codes,
 * for unimem. Names and values are OpenFAM 3.x's; the C ABI's negative results are minus
 * these codes (fam_c.h).
 *
 * Like OpenFAM's header, this one puts "using namespace std;" at global scope (programs
 * written for OpenFAM rely on it); fam.h includes it without that.
 */
#ifndef FAM_EXCEPTION_H
#define FAM_EXCEPTION_H

#include <exception>
#include <string>

namespace openfam {

enum Fam_Error {
    FAM_NO_ERROR = 0,
    FAM_ERR_UNKNOWN = 1,
    FAM_ERR_NOPERM = 2,
    FAM_ERR_TIMEOUT = 3,
    FAM_ERR_INVALID = 4,
    FAM_ERR_LIBFABRIC = 5,
    FAM_ERR_SHM = 6,
    FAM_ERR_NOT_CREATED = 7,
    FAM_ERR_NOTFOUND = 8,
    FAM_ERR_ALREADYEXIST = 9,
    FAM_ERR_ALLOCATOR = 10,
    FAM_ERR_RPC = 11,
    FAM_ERR_PMI = 12,
    FAM_ERR_OUTOFRANGE = 13,
    FAM_ERR_NO_SPACE = 14,
    FAM_ERR_NULLPTR = 15,
    FAM_ERR_UNIMPL = 16,
    FAM_ERR_RESOURCE = 17,
    FAM_ERR_INVALIDOP = 18,
    FAM_ERR_RPC_CLIENT_NOTFOUND = 19,
    FAM_ERR_MEMSERV_LIST_EMPTY = 20,
    FAM_ERR_METADATA = 21,
    FAM_ERR_MEMORY = 22,
    FAM_ERR_NAME_TOO_LONG = 23,
    FAM_ERR_ATL_QUEUE_FULL = 24,
    FAM_ERR_ATL_QUEUE_INSERT = 25,
    FAM_ERR_ATL_NOT_ENABLED = 26,
    FAM_ERR_ATL = 27,
    FAM_BACKUP_NOT_CREATED = 28,
    FAM_BACKUP_NOTFOUND = 29,
    FAM_BACKUP_INFO_NOTFOUND = 30,
    FAM_ERR_NOT_PWR_TWO = 31
};

/*
 * What every OpenFAM call throws on failure: fam_error() is the Fam_Error code,
 * fam_error_msg() (and what()) the message. The accessors are const noexcept, which
 * serves callers of OpenFAM 3.1's non-const ones and of its later const ones alike.
 */
class Fam_Exception : public std::exception {
  public:
    Fam_Exception() : famErrMsg("Unknown error"), famErr(FAM_ERR_UNKNOWN) {}

    Fam_Exception(const char *msg)
        : famErrMsg(msg ? msg : "Unknown error"), famErr(FAM_ERR_UNKNOWN) {}

    Fam_Exception(enum Fam_Error fErr, const char *msg)
        : famErrMsg(msg ? msg : "Unknown error"), famErr(fErr) {}

    Fam_Exception(const Fam_Exception &other)
        : std::exception(other), famErrMsg(other.famErrMsg), famErr(other.famErr) {}

    Fam_Exception &operator=(const Fam_Exception &other) {
        famErrMsg = other.famErrMsg;
        famErr = other.famErr;
        return *this;
    }

    virtual ~Fam_Exception() noexcept {}

    virtual char const *fam_error_msg() const noexcept { return famErrMsg.c_str(); }

    virtual int fam_error() const noexcept { return famErr; }

    virtual char const *what() const noexcept { return famErrMsg.c_str(); }

  protected:
    std::string famErrMsg;
    enum Fam_Error famErr;
};

} // namespace openfam

#endif /* FAM_EXCEPTION_H */

/* Outside the guard so that a later direct include still provides it. */
#ifndef UNIMEM_FAM_NO_USING_STD
using namespace std;
#endif
