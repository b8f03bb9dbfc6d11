//! The device side of the vhost-user protocol: what the frontend's messages do to our state.
//!
//! [`Device`] implements rust-vmm's `VhostUserBackendReqHandlerMut`; `vhost`'s
//! `BackendReqHandler` parses each message (and its file descriptors) and calls the matching
//! method here. The data path (`virtq`) reads the state the messages left: the mapped guest
//! memory and the two virtqueues. Nothing here runs per packet.
//!
//! Rules followed (vhost-user specification, "Ring states" and "Starting and stopping rings"):
//! a ring **starts** when it gets its kick descriptor (SET_VRING_KICK, possibly "no fd" = the
//! backend polls); when VHOST_USER_F_PROTOCOL_FEATURES was negotiated it starts *disabled* and
//! carries traffic only after SET_VRING_ENABLE(1), otherwise it starts enabled. GET_VRING_BASE
//! **stops** a ring and returns where the backend stopped reading the available ring. Ring
//! addresses arrive as the frontend's virtual addresses (SET_VRING_ADDR) and are translated
//! through the memory table into guest physical addresses, which is what descriptors contain.

use std::fs::File;
use vhost::vhost_user::message::{
    VhostTransferStateDirection, VhostTransferStatePhase, VhostUserConfigFlags, VhostUserInflight,
    VhostUserLog, VhostUserMemoryRegion, VhostUserProtocolFeatures, VhostUserShMemConfig,
    VhostUserSharedMsg, VhostUserSingleMemoryRegion, VhostUserVirtioFeatures,
    VhostUserVringAddrFlags, VhostUserVringState,
};
use vhost::vhost_user::{
    Error as VuError, GpuBackend, Result as VuResult, VhostUserBackendReqHandlerMut,
};
use vhost::VhostUserMemoryRegionBase;
use virtio_queue::{Queue, QueueT};
use vm_memory::{GuestAddress, GuestMemoryMmap, GuestRegionMmap};

/// The receive queue of virtio-net (device → driver): our transmit direction.
pub(super) const RXQ: usize = 0;
/// The transmit queue of virtio-net (driver → device): our receive direction.
pub(super) const TXQ: usize = 1;
/// Memory regions accepted in one SET_MEM_TABLE (VHOST_USER_MAX_RAM_SLOTS of the classic table).
pub const MAX_MEM_REGIONS: usize = 8;
/// Largest ring the frontend may choose (virtio 1.1 §2.6: split queue size ≤ 32768).
const MAX_QUEUE_SIZE: u16 = 32768;

/// virtio 1.1 §5.1.3: the device can merge receive buffers.
pub(super) const VIRTIO_NET_F_MRG_RXBUF: u64 = 1 << 15;
/// virtio 1.1 §6.3: the used_event / avail_event fields are used.
pub(super) const VIRTIO_RING_F_EVENT_IDX: u64 = 1 << 29;
/// virtio 1.1 §6.1: a modern (non-legacy) device.
pub(super) const VIRTIO_F_VERSION_1: u64 = 1 << 32;

/// What we offer in GET_FEATURES: one queue pair, split rings, no offloads.
pub(super) fn offered_features() -> u64 {
    VIRTIO_F_VERSION_1
        | VIRTIO_NET_F_MRG_RXBUF
        | VIRTIO_RING_F_EVENT_IDX
        | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()
}

/// One virtqueue and the descriptors and addresses the frontend gave for it.
#[derive(Debug)]
pub(super) struct Vring {
    pub queue: Queue,
    /// Frontend virtual addresses of (descriptor table, used ring, available ring).
    addrs: Option<(u64, u64, u64)>,
    /// Kick received (fd or "no fd") and not stopped by GET_VRING_BASE.
    started: bool,
    /// SET_VRING_ENABLE state (true from the start without PROTOCOL_FEATURES).
    enabled: bool,
    /// The eventfd we write to interrupt the driver.
    pub call: Option<File>,
    /// The eventfd the driver kicks; kept open (we poll the ring instead of waiting on it).
    kick: Option<File>,
    /// Used index at the last interrupt (EVENT_IDX accounting).
    pub signalled_used: Option<u16>,
    /// The driver has made buffers available since the ring started.
    posted: bool,
    /// SET_VRING_ENABLE received before SET_FEATURES (which `vhost` refuses then; QEMU 7.2's
    /// virtio-net sends it there), applied when PROTOCOL_FEATURES is acked.
    early_enable: Option<bool>,
}

impl Vring {
    fn new() -> Vring {
        Vring {
            queue: Queue::new(MAX_QUEUE_SIZE).expect("32768 is a valid virtqueue size"),
            addrs: None,
            started: false,
            enabled: false,
            call: None,
            kick: None,
            signalled_used: None,
            posted: false,
            early_enable: None,
        }
    }

    /// The queue carries traffic.
    pub fn live(&self) -> bool {
        self.started && self.enabled && self.queue.ready()
    }
}

/// Everything the frontend configured; shared (behind a mutex) between the protocol handler and
/// the data path.
#[derive(Debug)]
pub(super) struct Device {
    pub acked_features: u64,
    protocol_features: u64,
    pub mem: Option<GuestMemoryMmap>,
    /// (frontend virtual address, size, guest physical address) of each region.
    regions: Vec<(u64, u64, u64)>,
    pub vrings: [Vring; 2],
    /// Protocol errors of the current connection (requests we refused).
    pub refused: u64,
}

impl Device {
    pub fn new() -> Device {
        Device {
            acked_features: 0,
            protocol_features: 0,
            mem: None,
            regions: Vec::new(),
            vrings: [Vring::new(), Vring::new()],
            refused: 0,
        }
    }

    /// Forgets the connection: unmaps guest memory, closes the eventfds.
    pub fn reset(&mut self) {
        *self = Device::new();
    }

    /// Records a SET_VRING_ENABLE that arrives before SET_FEATURES acked PROTOCOL_FEATURES
    /// (`vhost` refuses it then): the ring takes that state when the features are set.
    pub fn note_early_enable(&mut self, index: u32, enable: bool) {
        let acked = self.acked_features & VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits() != 0;
        if let Some(vr) = self.vrings.get_mut(index as usize) {
            if !acked {
                vr.early_enable = Some(enable);
            }
        }
    }

    /// Both queues carry traffic.
    pub fn ready(&self) -> bool {
        self.mem.is_some() && self.vrings.iter().all(Vring::live)
    }

    /// Both queues carry traffic and the driver has posted receive buffers. virtio-user (and a
    /// guest) starts the device (DRIVER_OK, kicks) before it fills its receive ring; until then
    /// everything we send would be refused, so the link is not up yet.
    pub fn link_up(&mut self) -> bool {
        if !self.ready() {
            return false;
        }
        let Some(mem) = self.mem.as_ref() else {
            return false;
        };
        let rx = &mut self.vrings[RXQ];
        if !rx.posted {
            let avail = rx
                .queue
                .avail_idx(mem, std::sync::atomic::Ordering::Acquire)
                .map(|i| i.0);
            rx.posted = avail.is_ok_and(|a| a != rx.queue.next_avail());
        }
        rx.posted
    }

    /// Bytes of virtio-net header before each frame (virtio 1.1 §5.1.6: 12 with VERSION_1 or
    /// MRG_RXBUF, 10 for a legacy device without MRG_RXBUF).
    pub fn net_hdr_len(&self) -> usize {
        if self.acked_features & (VIRTIO_F_VERSION_1 | VIRTIO_NET_F_MRG_RXBUF) != 0 {
            12
        } else {
            10
        }
    }

    pub fn has(&self, feature: u64) -> bool {
        self.acked_features & feature != 0
    }

    /// Frontend virtual address → guest physical address, through the memory table.
    fn va_to_gpa(&self, va: u64) -> Option<u64> {
        self.regions
            .iter()
            .find(|&&(user, size, _)| va >= user && va - user < size)
            .map(|&(user, _, gpa)| va - user + gpa)
    }

    fn vring(&mut self, index: u32) -> VuResult<&mut Vring> {
        self.vrings
            .get_mut(index as usize)
            .ok_or(VuError::InvalidOperation(
                "only one queue pair (queues 0 and 1)",
            ))
    }

    /// Makes a started ring usable once everything it needs is known: memory, addresses.
    fn arm(&mut self, index: usize) {
        let event_idx = self.has(VIRTIO_RING_F_EVENT_IDX);
        let Some((desc, used, avail)) = self.vrings[index].addrs else {
            return;
        };
        let (Some(d), Some(u), Some(a)) = (
            self.va_to_gpa(desc),
            self.va_to_gpa(used),
            self.va_to_gpa(avail),
        ) else {
            tracing::warn!(index, "vhost-user ring addresses outside the memory table");
            return;
        };
        let Some(mem) = self.mem.as_ref() else { return };
        let vr = &mut self.vrings[index];
        let q = &mut vr.queue;
        q.set_desc_table_address(Some(d as u32), Some((d >> 32) as u32));
        q.set_used_ring_address(Some(u as u32), Some((u >> 32) as u32));
        q.set_avail_ring_address(Some(a as u32), Some((a >> 32) as u32));
        q.set_event_idx(event_idx);
        q.set_ready(vr.started);
        if vr.started && !q.is_valid(mem) {
            tracing::warn!(index, "vhost-user ring does not fit the guest memory");
            q.set_ready(false);
        }
        if q.ready() {
            // A frontend that outlived its backend (DPDK virtio-user with `server=1`, when a
            // new backend connects) sends SET_VRING_BASE 0 while its rings have moved on; with
            // that base the available ring looked more than full and every frame was refused.
            // As DPDK's vhost library does, resume where the used ring says the device stopped
            // (everything it had taken was completed: we never hold descriptors across polls).
            if let Ok(used) = q.used_idx(mem, std::sync::atomic::Ordering::Acquire) {
                if used.0 != q.next_used() {
                    tracing::info!(
                        index,
                        base = q.next_used(),
                        used = used.0,
                        "vhost-user ring base differs from the used index; resuming at the used index"
                    );
                    q.set_next_avail(used.0);
                    q.set_next_used(used.0);
                }
            }
            // We poll: ask the driver not to kick (VRING_USED_F_NO_NOTIFY; with EVENT_IDX the
            // driver kicks only when avail_event says so, and we never move it).
            let _ = q.disable_notification(mem);
        }
    }
}

fn refuse<T>(what: &'static str) -> VuResult<T> {
    Err(VuError::InvalidOperation(what))
}

impl VhostUserBackendReqHandlerMut for Device {
    fn set_owner(&mut self) -> VuResult<()> {
        Ok(())
    }
    fn reset_owner(&mut self) -> VuResult<()> {
        self.reset();
        Ok(())
    }
    fn reset_device(&mut self) -> VuResult<()> {
        self.reset();
        Ok(())
    }
    fn get_features(&mut self) -> VuResult<u64> {
        Ok(offered_features())
    }
    fn set_features(&mut self, features: u64) -> VuResult<()> {
        if features & !offered_features() != 0 {
            self.refused += 1;
            return Err(VuError::InvalidParam);
        }
        self.acked_features = features;
        let no_protocol = features & VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits() == 0;
        for i in 0..2 {
            if no_protocol {
                self.vrings[i].enabled = true;
            } else if let Some(e) = self.vrings[i].early_enable.take() {
                self.vrings[i].enabled = e;
            }
            self.arm(i);
        }
        Ok(())
    }
    fn set_mem_table(
        &mut self,
        regions: &[VhostUserMemoryRegion],
        files: Vec<File>,
        _postcopy_listening: Option<bool>,
    ) -> VuResult<Option<Vec<VhostUserMemoryRegionBase>>> {
        if regions.len() > MAX_MEM_REGIONS {
            self.refused += 1;
            return refuse("more than 8 memory regions");
        }
        let mut mapped = Vec::with_capacity(regions.len());
        for (r, f) in regions.iter().zip(files) {
            let mmap = r.mmap_region::<()>(f)?;
            let region = GuestRegionMmap::new(mmap, GuestAddress(r.guest_phys_addr))
                .ok_or(VuError::InvalidParam)?;
            mapped.push(region);
        }
        let mem = GuestMemoryMmap::from_regions(mapped).map_err(|e| {
            VuError::ReqHandlerError(std::io::Error::other(format!("memory table: {e}")))
        })?;
        self.mem = Some(mem);
        self.regions = regions
            .iter()
            .map(|r| (r.user_addr, r.memory_size, r.guest_phys_addr))
            .collect();
        self.arm(RXQ);
        self.arm(TXQ);
        Ok(None)
    }
    fn set_vring_num(&mut self, index: u32, num: u32) -> VuResult<()> {
        if num == 0 || num > MAX_QUEUE_SIZE as u32 || !num.is_power_of_two() {
            return Err(VuError::InvalidParam);
        }
        self.vring(index)?.queue.set_size(num as u16);
        Ok(())
    }
    fn set_vring_addr(
        &mut self,
        index: u32,
        _flags: VhostUserVringAddrFlags,
        descriptor: u64,
        used: u64,
        available: u64,
        _log: u64,
    ) -> VuResult<()> {
        self.vring(index)?.addrs = Some((descriptor, used, available));
        self.arm(index as usize);
        Ok(())
    }
    fn set_vring_base(&mut self, index: u32, base: u32) -> VuResult<()> {
        let q = &mut self.vring(index)?.queue;
        q.set_next_avail(base as u16);
        q.set_next_used(base as u16);
        Ok(())
    }
    fn get_vring_base(&mut self, index: u32) -> VuResult<VhostUserVringState> {
        let vr = self.vring(index)?;
        vr.started = false;
        vr.posted = false;
        vr.queue.set_ready(false);
        vr.kick = None;
        vr.call = None;
        vr.signalled_used = None;
        Ok(VhostUserVringState::new(
            index,
            vr.queue.next_avail() as u32,
        ))
    }
    fn set_vring_kick(&mut self, index: u8, fd: Option<File>) -> VuResult<()> {
        let vr = self.vring(index as u32)?;
        vr.kick = fd;
        vr.started = true;
        self.arm(index as usize);
        Ok(())
    }
    fn set_vring_call(&mut self, index: u8, fd: Option<File>) -> VuResult<()> {
        self.vring(index as u32)?.call = fd;
        Ok(())
    }
    fn set_vring_err(&mut self, index: u8, _fd: Option<File>) -> VuResult<()> {
        self.vring(index as u32)?;
        Ok(())
    }
    fn get_protocol_features(&mut self) -> VuResult<VhostUserProtocolFeatures> {
        Ok(VhostUserProtocolFeatures::REPLY_ACK)
    }
    fn set_protocol_features(&mut self, features: u64) -> VuResult<()> {
        self.protocol_features = features;
        Ok(())
    }
    fn get_queue_num(&mut self) -> VuResult<u64> {
        Ok(1)
    }
    fn set_vring_enable(&mut self, index: u32, enable: bool) -> VuResult<()> {
        self.vring(index)?.enabled = enable;
        self.arm(index as usize);
        Ok(())
    }
    fn get_config(
        &mut self,
        _offset: u32,
        _size: u32,
        _flags: VhostUserConfigFlags,
    ) -> VuResult<Vec<u8>> {
        refuse("no device config space (CONFIG not offered)")
    }
    fn set_config(&mut self, _: u32, _: &[u8], _: VhostUserConfigFlags) -> VuResult<()> {
        refuse("no device config space (CONFIG not offered)")
    }
    fn set_gpu_socket(&mut self, _gpu_backend: GpuBackend) -> VuResult<()> {
        refuse("not a GPU device")
    }
    fn get_shared_object(&mut self, _uuid: VhostUserSharedMsg) -> VuResult<File> {
        refuse("no shared objects")
    }
    fn get_inflight_fd(
        &mut self,
        _inflight: &VhostUserInflight,
    ) -> VuResult<(VhostUserInflight, File)> {
        refuse("INFLIGHT_SHMFD not offered")
    }
    fn set_inflight_fd(&mut self, _inflight: &VhostUserInflight, _file: File) -> VuResult<()> {
        refuse("INFLIGHT_SHMFD not offered")
    }
    fn get_max_mem_slots(&mut self) -> VuResult<u64> {
        Ok(MAX_MEM_REGIONS as u64)
    }
    fn add_mem_region(
        &mut self,
        _region: &VhostUserSingleMemoryRegion,
        _fd: File,
        _postcopy_listening: Option<bool>,
    ) -> VuResult<Option<VhostUserMemoryRegionBase>> {
        refuse("CONFIGURE_MEM_SLOTS not offered")
    }
    fn remove_mem_region(&mut self, _region: &VhostUserSingleMemoryRegion) -> VuResult<()> {
        refuse("CONFIGURE_MEM_SLOTS not offered")
    }
    fn set_device_state_fd(
        &mut self,
        _direction: VhostTransferStateDirection,
        _phase: VhostTransferStatePhase,
        _fd: File,
    ) -> VuResult<Option<File>> {
        refuse("DEVICE_STATE not offered")
    }
    fn check_device_state(&mut self) -> VuResult<()> {
        refuse("DEVICE_STATE not offered")
    }
    fn get_shmem_config(&mut self) -> VuResult<VhostUserShMemConfig> {
        refuse("SHMEM not offered")
    }
    fn set_log_base(&mut self, _log: &VhostUserLog, _file: File) -> VuResult<()> {
        refuse("LOG_SHMFD not offered (no live migration)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QEMU 7.2 sends SET_VRING_ENABLE before SET_FEATURES; what it asked for takes effect when
    /// PROTOCOL_FEATURES is acked (and only then: the ring starts disabled per the spec).
    #[test]
    fn an_enable_before_set_features_applies_when_protocol_features_are_acked() {
        let mut d = Device::new();
        d.note_early_enable(0, true);
        d.note_early_enable(1, false);
        d.note_early_enable(7, true); // no such ring: ignored
        assert!(!d.vrings[0].enabled && !d.vrings[1].enabled);
        d.set_features(offered_features()).unwrap();
        assert!(d.vrings[0].enabled);
        assert!(!d.vrings[1].enabled);
        // Once the features are known, `vhost` passes SET_VRING_ENABLE on: nothing is noted.
        d.note_early_enable(1, true);
        assert_eq!(d.vrings[1].early_enable, None);
    }

    /// Without PROTOCOL_FEATURES the rings start enabled whatever came before.
    #[test]
    fn without_protocol_features_rings_start_enabled() {
        let mut d = Device::new();
        d.note_early_enable(0, false);
        d.set_features(offered_features() & !VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits())
            .unwrap();
        assert!(d.vrings[0].enabled && d.vrings[1].enabled);
    }
}
