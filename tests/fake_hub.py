"""A Hugging Face Hub stand-in that keeps repositories in a local folder (no network here)."""

import shutil
from pathlib import Path

from requests.exceptions import HTTPError


class LocalHub:
    """Plays ``huggingface_hub.HfApi`` (create_repo, snapshot_download, upload_folder) and ``hf_hub_download``."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.uploads: list[tuple[str, str]] = []

    def __call__(self, *args, **kwargs) -> "LocalHub":  # HfApi() returns this same object
        return self

    def repo(self, repo_id: str) -> Path:
        return self.root / str(repo_id)

    def create_repo(self, repo_id: str, token=None, private=False, exist_ok=False, **kwargs) -> str:
        self.repo(repo_id).mkdir(parents=True, exist_ok=exist_ok)
        return f"local://{repo_id}"

    def snapshot_download(self, repo_id: str, local_dir, **kwargs) -> str:
        shutil.copytree(self.repo(repo_id), local_dir, dirs_exist_ok=True)
        return str(local_dir)

    def upload_folder(self, repo_id: str, folder_path, commit_message: str = "", **kwargs) -> str:
        shutil.copytree(folder_path, self.repo(repo_id), dirs_exist_ok=True)
        self.uploads.append((str(repo_id), commit_message))
        return f"local://{repo_id}"

    def hf_hub_download(self, repo_id: str, filename: str, **kwargs) -> str:
        path = self.repo(repo_id) / filename
        if not path.is_file():
            raise HTTPError(f"404: {filename} not in {repo_id}")
        return str(path)
