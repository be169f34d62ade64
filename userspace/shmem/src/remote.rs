//! [`Remote`]: the GSAS operations the job descriptor and the output rings need, so that their
//! logic runs over a [`gsas::Gsas`] handle in a job and over a plain map in the unit tests.

use gsas::{Gsas, Result, Transport};

pub trait Remote {
    fn read(&self, addr: u64) -> Result<u64>;
    fn write(&self, addr: u64, v: u64) -> Result<()>;
    fn fetch_add(&self, addr: u64, v: u64) -> Result<u64>;
    fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    fn bulk_write(&self, addr: u64, data: &[u8]) -> Result<()>;
}

impl<T: Transport> Remote for Gsas<T> {
    fn read(&self, addr: u64) -> Result<u64> {
        Gsas::read(self, addr)
    }
    fn write(&self, addr: u64, v: u64) -> Result<()> {
        Gsas::write(self, addr, v)
    }
    fn fetch_add(&self, addr: u64, v: u64) -> Result<u64> {
        Gsas::fetch_add(self, addr, v)
    }
    fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        Gsas::bulk_read(self, addr, buf)
    }
    fn bulk_write(&self, addr: u64, data: &[u8]) -> Result<()> {
        Gsas::bulk_write(self, addr, data)
    }
}
