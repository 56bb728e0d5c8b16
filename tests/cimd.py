"""A test-only CIMD fetcher: client metadata documents come from a JSON file the test writes, not the network.

Test settings name it as ``OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"]`` only when ``MCP_TEST_CIMD_DOCUMENTS``
names that file (``{client_id URL: document}``). It exists because the production fetcher
(``oauth2_provider.cimd.SafeMetadataFetcher``) rightly refuses plain http and non-public addresses, so a
test cannot serve it a document from loopback; the production fetcher is never changed or weakened, and
this class is never used outside the test suite. It still validates the client_id URL the way the
production fetcher does (https, a host, a path, no userinfo, fragment or dot segments).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from oauth2_provider.cimd import CIMDError, _validate_client_id_url

from mcp_tools.oauth.redirect_uris import CheckedMetadataFetcher

DOCUMENTS = "MCP_TEST_CIMD_DOCUMENTS"
MAX_AGE = 300


class FileMetadataFetcher(CheckedMetadataFetcher):
    """``fetch(client_id)`` -> (document, max age) from the file ``MCP_TEST_CIMD_DOCUMENTS`` names, its redirect
    URIs checked as the site's own fetcher checks them."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        _validate_client_id_url(client_id)
        documents = json.loads(Path(os.environ[DOCUMENTS]).read_text())
        if client_id not in documents:
            raise CIMDError(f"no document at {client_id}")
        return self.checked(dict(documents[client_id])), MAX_AGE


def write_documents(path: Path, documents: dict[str, dict[str, Any]]) -> None:
    """Publish client metadata documents where a live site's fetcher reads them."""
    path.write_text(json.dumps(documents))
