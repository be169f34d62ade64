//! OpenFAM's options: what `fam_initialize` takes (`Fam_Options`, every member optional) and
//! what `fam_get_option` / `fam_list_options` report, with OpenFAM's names.

use super::pe::{check_runtime, Pe};
use crate::{FamError, Result};

/// What OpenFAM reports as its version (the API level unimem implements).
pub const VERSION: &str = "3.2.0";
/// The region `fam_allocate` uses when given none.
pub const DEFAULT_REGION_NAME: &str = "Default";

/// The names `fam_list_options` gives, in OpenFAM's order.
pub const NAMES: [&str; 16] = [
    "VERSION",
    "DEFAULT_REGION_NAME",
    "CIS_SERVER",
    "GRPC_PORT",
    "LIBFABRIC_PROVIDER",
    "FAM_THREAD_MODEL",
    "CIS_INTERFACE_TYPE",
    "OPENFAM_MODEL",
    "FAM_CONTEXT_MODEL",
    "PE_COUNT",
    "PE_ID",
    "RUNTIME",
    "NUM_CONSUMER",
    "FAM_DEFAULT_MEMORY_TYPE",
    "IF_DEVICE",
    "LOC_BUF_SIZE",
];

/// `Fam_Options`: `None` is "not given" (the default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub default_region_name: Option<String>,
    pub cis_server: Option<String>,
    pub grpc_port: Option<String>,
    pub libfabric_provider: Option<String>,
    pub fam_thread_model: Option<String>,
    pub cis_interface_type: Option<String>,
    pub openfam_model: Option<String>,
    pub fam_context_model: Option<String>,
    pub num_consumer: Option<String>,
    pub runtime: Option<String>,
    pub fam_default_memory_type: Option<String>,
    pub if_device: Option<String>,
    /// A local buffer to register up front (nothing to register with GSAS: kept for
    /// `LOC_BUF_SIZE`).
    pub local_buf_addr: usize,
    pub local_buf_size: u64,
}

/// A value `fam_get_option` gives: an `int` (PE_ID, PE_COUNT), a `uint64_t` (LOC_BUF_SIZE)
/// or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    Int(i32),
    U64(u64),
    Str(String),
}

fn one_of(what: &str, v: &Option<String>, allowed: &[&str]) -> Result<()> {
    match v {
        Some(s) if !allowed.contains(&s.as_str()) => Err(FamError::Invalid(format!(
            "{what} {s:?}: known are {}",
            allowed.join(", ")
        ))),
        _ => Ok(()),
    }
}

impl Options {
    /// Refuses values OpenFAM refuses (an unknown thread, context or OpenFAM model or
    /// runtime). unimem is thread-safe either way, and serves both OpenFAM models the same.
    pub fn check(&self) -> Result<()> {
        one_of(
            "famThreadModel",
            &self.fam_thread_model,
            &["FAM_THREAD_SERIALIZE", "FAM_THREAD_MULTIPLE"],
        )?;
        // "SHM" is what OpenFAM's own SpMV application (test/apps/spmv) still passes for
        // shared_memory; OpenFAM 3.2 refuses it, which leaves that application unable to run.
        // Taken as shared_memory, which unimem serves as it serves memory_server.
        one_of(
            "openFamModel",
            &self.openfam_model,
            &["memory_server", "shared_memory", "SHM"],
        )?;
        one_of(
            "famContextModel",
            &self.fam_context_model,
            &["FAM_CONTEXT_DEFAULT", "FAM_CONTEXT_REGION"],
        )?;
        check_runtime(self.runtime.as_deref())
    }

    /// The region used when none is given.
    pub fn default_region(&self) -> &str {
        self.default_region_name
            .as_deref()
            .unwrap_or(DEFAULT_REGION_NAME)
    }

    /// Option `name` (one of [`NAMES`]) as this instance sees it: given, or its default.
    pub fn value(&self, name: &str, pe: &Pe, famd_node: u16) -> Result<OptionValue> {
        let s = |given: &Option<String>, default: &str| {
            OptionValue::Str(given.clone().unwrap_or_else(|| default.to_string()))
        };
        Ok(match name {
            "VERSION" => OptionValue::Str(VERSION.into()),
            "DEFAULT_REGION_NAME" => OptionValue::Str(self.default_region().into()),
            "CIS_SERVER" => OptionValue::Str(famd_node.to_string()),
            "GRPC_PORT" => s(&self.grpc_port, "0"),
            "LIBFABRIC_PROVIDER" => s(&self.libfabric_provider, "unimem"),
            "FAM_THREAD_MODEL" => s(&self.fam_thread_model, "FAM_THREAD_SERIALIZE"),
            "CIS_INTERFACE_TYPE" => s(&self.cis_interface_type, "mailbox"),
            "OPENFAM_MODEL" => s(&self.openfam_model, "memory_server"),
            "FAM_CONTEXT_MODEL" => s(&self.fam_context_model, "FAM_CONTEXT_DEFAULT"),
            "PE_COUNT" => OptionValue::Int(pe.count as i32),
            "PE_ID" => OptionValue::Int(pe.id as i32),
            "RUNTIME" => s(
                &self.runtime,
                if pe.job.is_some() { "SHMEM" } else { "NONE" },
            ),
            "NUM_CONSUMER" => s(&self.num_consumer, "1"),
            "FAM_DEFAULT_MEMORY_TYPE" => s(&self.fam_default_memory_type, "volatile"),
            "IF_DEVICE" => s(&self.if_device, ""),
            "LOC_BUF_SIZE" => OptionValue::U64(self.local_buf_size),
            other => {
                return Err(FamError::Invalid(format!(
                    "no option {other:?} (fam_list_options lists them)"
                )))
            }
        })
    }
}
