/**
 * virt-api's own authorization of each `subresources.kubevirt.io` call, as upstream's
 * virt-api does (pkg/virt-api/rest/authorizer.go): a SubjectAccessReview for the front
 * proxy's user on the namespace, resource, name and subresource virt-api is about to act
 * on. The API server's RBAC already checked its own reading of the path; this check binds
 * the object virt-api touches to the user's permissions whatever that reading was.
 */
import type { ObjectClient, ResourceType } from '../runtime/types';
import type { RemoteUser } from './front-proxy-auth';
import { HttpError } from './http-error';
import type { SubresourceRoute } from './request-path';

/** The `resourceAttributes` of a SubjectAccessReview. */
export interface ResourceAttributes {
  namespace: string;
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  name?: string;
}

/** Decides whether `user` may do `attrs`; `reason` says why not. */
export type Authorizer = (
  user: RemoteUser,
  attrs: ResourceAttributes,
) => Promise<{ allowed: boolean; reason?: string }>;

const SubjectAccessReviewType: ResourceType = {
  group: 'authorization.k8s.io',
  version: 'v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  namespaced: false,
  statusSubresource: false,
};

/** Upstream's mapHttpVerbToRbacVerb (named: there is always a name or a namespace). */
export function rbacVerb(method: string, named: boolean): string {
  switch (method.toUpperCase()) {
    case 'POST':
      return 'create';
    case 'GET':
    case 'HEAD':
      return named ? 'get' : 'list';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      throw new HttpError(405, `unknown HTTP method ${JSON.stringify(method.slice(0, 20))}`);
  }
}

/**
 * The attributes of a routed request. As upstream, `portforward/{port}[/{protocol}]` is
 * checked as `portforward` (port and protocol are not subject to RBAC); other
 * subresources keep all their segments (`vnc/screenshot`, `sev/fetchcertchain`).
 */
export function attributesOf(route: SubresourceRoute, method: string, group: string): ResourceAttributes {
  const sub = route.subresource?.startsWith('portforward/') ? 'portforward' : route.subresource;
  return {
    namespace: route.namespace,
    verb: rbacVerb(method, route.name !== undefined),
    group,
    version: route.version,
    resource: route.resource,
    ...(sub ? { subresource: sub } : {}),
    ...(route.name ? { name: route.name } : {}),
  };
}

/** An {@link Authorizer} asking the API server (virt-api's account may create SubjectAccessReviews). */
export function subjectAccessReviewAuthorizer(client: ObjectClient): Authorizer {
  return async (user, attrs) => {
    const review = await client.create<{
      apiVersion: string;
      kind: string;
      metadata?: Record<string, never>;
      spec: unknown;
      status?: { allowed?: boolean; denied?: boolean; reason?: string };
    }>(SubjectAccessReviewType, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.name,
        groups: user.groups,
        ...(Object.keys(user.extra).length ? { extra: { ...user.extra } } : {}),
        resourceAttributes: attrs,
      },
    });
    return { allowed: review.status?.allowed === true, reason: review.status?.reason };
  };
}

/** Runs `authorize` and throws 403 (upstream's refusal) unless allowed; 500 when it fails. */
export async function requireAllowed(
  authorize: Authorizer,
  user: RemoteUser,
  attrs: ResourceAttributes,
): Promise<void> {
  let decision: { allowed: boolean; reason?: string };
  try {
    decision = await authorize(user, attrs);
  } catch (e) {
    throw new HttpError(500, `authorizing the request: ${(e as Error).message}`);
  }
  if (!decision.allowed) {
    const what = `${attrs.resource}${attrs.subresource ? `/${attrs.subresource}` : ''}`;
    throw new HttpError(
      403,
      `user ${JSON.stringify(user.name)} cannot ${attrs.verb} ${what}${attrs.name ? ` ${JSON.stringify(attrs.name)}` : ''} in namespace ${JSON.stringify(attrs.namespace)}${decision.reason ? `: ${decision.reason}` : ''}`,
    );
  }
}
