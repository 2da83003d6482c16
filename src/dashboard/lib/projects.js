/** The account's project of a given name (pages address projects by name, as the data API does). */
import { ApiError, projects } from './api.js';
import { useLoad } from './hooks.js';

export function useProject(name) {
  return useLoad(async () => {
    const { data } = await projects.list();
    const project = data.projects.find((p) => p.name === name);
    if (!project) throw new ApiError(404, 'not_found', `You have no project named "${name}".`);
    return project;
  }, [name]);
}
