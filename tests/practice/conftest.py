import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # Practice's networks are small: extra threads buy nothing and, on a busy machine, spin-wait.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
