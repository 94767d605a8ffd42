"""CPU flags, as the kernel and libvirt spell them, to os-traits."""
import pytest

from tracker.drivers.cpu_traits import traits_for_flags


@pytest.mark.parametrize('flag, trait', [
    ('avx2', 'HW_CPU_X86_AVX2'),
    ('sse4_1', 'HW_CPU_X86_SSE41'),          # kernel
    ('sse4.2', 'HW_CPU_X86_SSE42'),          # libvirt
    ('pni', 'HW_CPU_X86_SSE3'),
    ('pclmulqdq', 'HW_CPU_X86_CLMUL'),
    ('pclmuldq', 'HW_CPU_X86_CLMUL'),        # libvirt
    ('aes', 'HW_CPU_X86_AESNI'),
    ('fma', 'HW_CPU_X86_FMA3'),
    ('bmi1', 'HW_CPU_X86_BMI'),
    ('sha_ni', 'HW_CPU_X86_SHA'),
    ('avx512_vnni', 'HW_CPU_X86_AVX512VNNI'),
    ('avx512-vpopcntdq', 'HW_CPU_X86_AVX512VPOPCNTDQ'),
    ('vaes', 'HW_CPU_X86_AVX512VAES'),
    ('rtm', 'HW_CPU_X86_TSX'),
])
def test_x86_flags(flag, trait):
    assert traits_for_flags([flag]) == {trait}


@pytest.mark.parametrize('flag, traits', [
    ('svm', {'HW_CPU_X86_SVM', 'HW_CPU_X86_AMD_SVM'}),
    ('vmx', {'HW_CPU_X86_VMX', 'HW_CPU_X86_INTEL_VMX'}),
])
def test_virtualization_flags_give_both_names(flag, traits):
    """as nova's libvirt driver reports them"""
    assert traits_for_flags([flag]) == traits


def test_flags_without_a_trait_are_ignored():
    assert traits_for_flags(['fpu', 'popcnt', 'hypervisor', '']) == set()


def test_memory_encryption_flags_give_no_root_trait():
    """nova 34 reports HW_CPU_X86_AMD_SEV* on its memory-encryption
    children only (and takes the old SEV trait off the compute node)."""
    assert traits_for_flags(['sev', 'sev_es', 'sev_snp', 'sev-es']) == set()


def test_aarch64_features():
    assert traits_for_flags(['asimd', 'sve', 'aes', 'fp'], arch='aarch64') \
        == {'HW_CPU_AARCH64_ASIMD', 'HW_CPU_AARCH64_SVE',
            'HW_CPU_AARCH64_AES', 'HW_CPU_AARCH64_FP'}
