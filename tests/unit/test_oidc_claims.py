"""OpenID Connect claim profiles and the key-set cache (services/platform/identity/oidc.py)
without a network: GitLab's claims read like GitHub's, refetches bounded per issuer."""

from __future__ import annotations

from typing import Any

import pytest
from joserfc.jwk import KeySet, RSAKey

from services.platform.identity.oidc import PROFILES, IdTokenRefused, KeySetCache


def test_gitlab_claims_map_to_the_same_run_terms() -> None:
    run = PROFILES["gitlab"](
        {
            "project_path": "group/anonymizer",
            "project_id": "4711",
            "namespace_id": "12",
            "ref_path": "refs/heads/main",
            "environment": "evaluation",
            "ci_config_ref_uri": "gitlab.com/group/anonymizer//.gitlab-ci.yml@refs/heads/main",
            "pipeline_id": "991",
            "pipeline_source": "merge_request_event",
        }
    )
    assert (run.repository, run.repository_id, run.owner_id) == ("group/anonymizer", "4711", "12")
    assert (run.ref, run.environment, run.workflow) == (
        "refs/heads/main",
        "evaluation",
        ".gitlab-ci.yml",
    )
    assert run.run_id == "991" and run.pull_request


def test_github_claims_need_the_repository_id() -> None:
    with pytest.raises(IdTokenRefused) as refused:
        PROFILES["github"]({"repository": "a/b"})
    assert refused.value.claim == "repository_id"


def test_unknown_kids_refetch_at_most_once_per_interval() -> None:
    now = [1000.0]
    cache = KeySetCache(allow_private=True, ttl_s=3600, min_refresh_s=60, clock=lambda: now[0])
    served = [KeySet([RSAKey.generate_key(2048, parameters={"kid": "a"})])]

    def fetch(issuer: str) -> Any:
        cache.fetches += 1
        return served[-1]

    cache._fetch = fetch  # type: ignore[method-assign]
    cache.key_set("https://issuer.example", "a")
    cache.key_set("https://issuer.example", "a")
    assert cache.fetches == 1
    cache.key_set("https://issuer.example", "new")  # unknown: one refetch
    cache.key_set("https://issuer.example", "other")  # again within a minute: none
    assert cache.fetches == 2
    now[0] += 61
    cache.key_set("https://issuer.example", "other")
    assert cache.fetches == 3
    now[0] += 3600  # stale: refetched even for a known kid
    cache.key_set("https://issuer.example", "a")
    assert cache.fetches == 4
