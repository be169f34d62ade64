//! C API (later).
