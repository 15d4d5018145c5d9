//! The kernel's own translations: global mappings (ARM's nG bit clear, x86's G bit set without
//! page-table isolation). ARM Linux maps the kernel global, so its TLB entries translate for every
//! ASID, survive ASID switches and rollovers, and take TLB room from the threads' entries (seed
//! 000 §8.2: "a higher number of TLB entries get replaced by kernel specific entries because the
//! TLB fits only 64 of them"). Not on the per-access path: the switch path calls it
//! (`OsConfig::kernel_pages`) and techniques whose kernel work is traced (seed 000's save and
//! restore).

use crate::os::kernel_linear;
use crate::system::{SimError, System};
use crate::tlb::TlbEntry;
use tlblab_types::{PageSize, Pfn, ThreadId, VirtAddr, Vpn};

impl System {
    /// Whether the kernel's own translations are traced (`OsConfig::kernel_pages` or
    /// `kernel_return_pages` > 0): then techniques' kernel work goes through `kernel_touch`,
    /// else through `kernel_access`.
    pub fn kernel_traced(&self) -> bool {
        self.options.os.kernel_pages > 0 || self.options.os.kernel_return_pages > 0
    }

    /// One kernel load (or store) of physical address `pa` through the kernel's linear map
    /// (`os::kernel_linear`) by hardware thread `cpu`, on behalf of `thread` (whose ASID,
    /// VMID and hardware thread tag the entry; a global entry translates for all). The core's
    /// data TLB levels are looked up in order, each costing its latency; after a miss in all,
    /// the page's descriptor is loaded through the data caches (the kernel's one-level table);
    /// the levels above the one that hit (all after a miss) are filled with a global 4 KiB
    /// entry; then `pa` is loaded through the data caches. Returns the cycles.
    pub fn kernel_touch(
        &mut self,
        cpu: usize,
        thread: ThreadId,
        pa: u64,
        write: bool,
    ) -> Result<u64, SimError> {
        let st = self.thread_state(thread)?;
        let st = super::ThreadState { cpu, ..st };
        let req = self.requester(st);
        let k = kernel_linear(self.va_limit, self.config.memory.bytes, pa);
        let va = VirtAddr(k.va);
        let path = self.cores[self.cpus[cpu].core].dtlb.clone();
        let mut cycles = 0;
        let mut hit_at = path.len();
        for (i, &(t, _)) in path.iter().enumerate() {
            cycles += self.tlbs[t].config.latency;
            if self.tlbs[t].lookup(va, req).is_some() {
                hit_at = i;
                break;
            }
        }
        if hit_at == path.len() {
            cycles += self.kernel_access(cpu, k.descriptor, false);
        }
        let mut e = TlbEntry::new(Vpn(k.va >> 12), PageSize::Size4K, Pfn(pa >> 12), req.asid);
        e.vmid = req.vmid;
        e.hw_thread = req.hw_thread;
        e.global = true;
        self.any_global = true;
        for &(t, _) in &path[..hit_at] {
            self.tlbs[t].fill(e);
        }
        Ok(cycles + self.kernel_access(cpu, pa, write))
    }
}
